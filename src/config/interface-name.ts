// The rule for network interface names kube-proxy puts into rules (--pod-bridge-interface,
// --pod-interface-name-prefix): what the Linux kernel accepts as a device name (dev_valid_name),
// narrowed by what the rule languages give a meaning to. Upstream's config validation only
// requires the name to be non-empty; this is checked once, here, so no odd name reaches an
// iptables-restore or nft input.

/** IFNAMSIZ: the kernel's name buffer, terminating NUL included. */
const IFNAMSIZ = 16;

// Wildcards ('+' in iptables, '*' in nft), quotes and backslashes mean something in the restore
// and nft languages; control characters have no business in a name. Linux would accept these
// (all but whitespace, '/' and ':'), but no real interface is named with them.
const RULE_SPECIAL = /[+*"'\\]/;
// Control characters, as a set of code points (a regex literal with them would trip linters).
const isControl = (code: number) => code < 0x20 || code === 0x7f;

function byteLength(text: string): number {
  return new TextEncoder().encode(text).length;
}

/**
 * Why `name` cannot be an interface name, or undefined when it can. `prefix`: the name is a
 * prefix to which the rules append a one-character wildcard, so it must leave room for it.
 */
export function interfaceNameProblem(name: string, prefix = false): string | undefined {
  if (name === "") return "must not be empty";
  if (name === "." || name === "..") return 'must not be "." or ".."';
  const max = IFNAMSIZ - 1 - (prefix ? 1 : 0);
  const bytes = byteLength(name);
  if (bytes > max) {
    return prefix
      ? `must be at most ${max} bytes (an interface name is at most ${IFNAMSIZ - 1}, and the match adds a wildcard); has ${bytes}`
      : `must be at most ${max} bytes (Linux's IFNAMSIZ is ${IFNAMSIZ}, with the terminating NUL); has ${bytes}`;
  }
  if (/[/:]/.test(name)) return "must not contain '/' or ':' (Linux refuses them in device names)";
  if (/\s/.test(name)) return "must not contain whitespace";
  for (const ch of name) {
    if (isControl(ch.codePointAt(0) ?? 0)) return "must not contain control characters";
  }
  if (RULE_SPECIAL.test(name))
    return "must not contain '+', '*', quotes or backslashes ('+' and '*' are wildcards in iptables and nft matches)";
  return undefined;
}

// One iptables rule's arguments in a form that does not depend on who printed them: the rule as
// a restore input wrote it and the same rule as iptables-save prints it give the same key.
// iptables-save reorders matches (-d before -p before -m ...), adds the defaults it filled in
// (/32 on an address, -m tcp with --dport, REJECT's --reject-with, recent's --mask and
// --rsource), prints
// MARK's --or-mark and --xor-mark as --set-xmark, marks without leading zeros, and
// probabilities with eleven decimals.

/** Splits arguments as a shell would: double quotes group, a backslash escapes the next character. */
export function ruleTokens(text: string): string[] {
  const out: string[] = [];
  let cur = "";
  let inToken = false;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "\\" && i + 1 < text.length) {
      cur += text[++i];
      inToken = true;
    } else if (c === '"') {
      quoted = !quoted;
      inToken = true;
    } else if (!quoted && (c === " " || c === "\t")) {
      if (inToken) out.push(cur);
      cur = "";
      inToken = false;
    } else {
      cur += c;
      inToken = true;
    }
  }
  if (inToken) out.push(cur);
  return out;
}

const LONG_NAMES: Readonly<Record<string, string>> = {
  "--source": "-s",
  "--destination": "-d",
  "--protocol": "-p",
  "--jump": "-j",
  "--goto": "-g",
  "--in-interface": "-i",
  "--out-interface": "-o",
  "--match": "-m",
};

const PORT_MATCHES = new Set(["tcp", "udp", "sctp"]);
const DEFAULT_REJECTS = new Set(["icmp-port-unreachable", "icmp6-port-unreachable"]);
const ALL_ONES_MASKS = new Set(["255.255.255.255", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"]);

function withPrefix(address: string): string {
  if (address.includes("/")) return address;
  return address.includes(":") ? `${address}/128` : `${address}/32`;
}

/** One option with its values, "!" in front when negated (iptables-save's "! -s" and "-m x ! --y" alike). */
function optionGroups(tokens: readonly string[]): string[][] {
  const groups: string[][] = [];
  let negated = false;
  for (const t of tokens) {
    if (t === "!") negated = true;
    else if (t.length > 1 && t.startsWith("-") && !/^-\d/.test(t)) {
      groups.push(negated ? ["!", LONG_NAMES[t] ?? t] : [LONG_NAMES[t] ?? t]);
      negated = false;
    } else if (groups.length > 0) groups[groups.length - 1]!.push(t);
    else groups.push([t]);
  }
  return groups;
}

/** A group as the key holds it; undefined when it only says what iptables assumes anyway. */
function normalGroup(g: readonly string[]): string | undefined {
  const neg = g[0] === "!" ? "! " : "";
  const [opt, ...raw] = neg ? g.slice(1) : g;
  // Marks: the restore input may pad them ("0x00004000"), iptables-save does not.
  const values = raw.map((v) =>
    v.replace(/\b0x0*([0-9a-f]+)\b/gi, (_, hex: string) => `0x${hex.toLowerCase()}`),
  );
  const value = values.join(" ");
  switch (opt) {
    case "-m":
      return PORT_MATCHES.has(value) ? undefined : `${neg}-m ${value}`;
    case "-s":
    case "-d":
      return `${neg}${opt} ${withPrefix(value)}`;
    case "--reject-with":
      return DEFAULT_REJECTS.has(value) ? undefined : `${neg}${opt} ${value}`;
    case "--mask":
      return ALL_ONES_MASKS.has(value) ? undefined : `${neg}${opt} ${value}`;
    case "--rsource":
      return undefined;
    case "--or-mark":
      return `--set-xmark ${value}/${value}`;
    case "--xor-mark":
      return `--set-xmark ${value}/0x0`;
    case "--probability": {
      const p = Number(value);
      return `${opt} ${Number.isFinite(p) ? p.toFixed(6) : value}`;
    }
    default:
      return `${neg}${[opt, ...values].join(" ")}`;
  }
}

/**
 * The key of a rule's arguments (everything after "-A CHAIN"): each option with its values,
 * normalized, the options sorted. Two rules with the same key match the same packets and do
 * the same.
 */
export function ruleKey(args: string): string {
  const out: string[] = [];
  for (const g of optionGroups(ruleTokens(args))) {
    const n = normalGroup(g);
    if (n !== undefined) out.push(n);
  }
  return out.sort().join(" ; ");
}

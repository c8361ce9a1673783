// The grammar of what our proxiers write to the host, one small checker per output language:
// iptables-restore input and iptables argv, nft -f input, ipset restore input, ipvsadm
// --restore input and `ip -batch` input. Each returns the violations it finds as sentences;
// an empty list means every line is one the proxier could have meant to write. The shapes come
// from what the proxiers emit for the upstream goldens (test/modes/*/golden) and for valid
// generated clusters; test/proxy/restore-grammar.test.ts holds them to both and to planted
// injections. They judge structure (which lines, which options, which names and tables), never
// values the kernel checks itself (the real tools do that in the property tests).

import type { RecordedCommand } from "../../src/exec/dry-run.ts";
import { parseIpvsadmArgs, restoreLineWords } from "../../src/host/ipvs/syntax.ts";
import { IPTABLES_CLI, IPTABLES_RESTORE, programOf } from "./hostile-sync.ts";

const enc = new TextEncoder();
const bytes = (s: string) => enc.encode(s).length;

/**
 * C0 and C1 controls, DEL, the Unicode line and paragraph separators, broken characters: a lone
 * UTF-16 surrogate (half of a character cut in two) reaches the tool as U+FFFD, not as written.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\ud800-\udfff]/u;

const show = (s: string) => JSON.stringify(s.length > 160 ? `${s.slice(0, 160)}…` : s);

// ---------------------------------------------------------------- iptables

/** Our chains: KUBE- and upper-case letters, digits, '-'; iptables allows 28 characters. */
const KUBE_CHAIN = /^KUBE-[A-Z0-9-]{1,23}$/;
const BUILTIN_CHAINS = new Set(["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"]);
const TABLES = new Set(["nat", "filter", "mangle"]);
const TARGETS = new Set(["ACCEPT", "DROP", "REJECT", "RETURN", "MARK", "DNAT", "SNAT", "MASQUERADE"]);
const MODULES = new Set([
  ...["comment", "tcp", "udp", "sctp", "addrtype", "conntrack", "mark", "statistic", "recent"],
  ...["set", "nfacct", "multiport", "physdev", "limit", "ipvs"],
]);

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9a-f:]*:[0-9a-f:]*(\d+\.\d+\.\d+\.\d+)?$/;
const isIP = (s: string) => IPV4.test(s) || (IPV6.test(s) && s.includes(":"));
const isCIDR = (s: string) => {
  const [ip = "", len, extra] = s.split("/");
  if (extra !== undefined || !isIP(ip)) return false;
  if (len === undefined) return true;
  return /^\d{1,3}$/.test(len) && Number(len) <= (ip.includes(":") ? 128 : 32);
};
const isPort = (s: string) => /^\d{1,5}$/.test(s) && Number(s) <= 65535;
const isHostPort = (s: string) => {
  const m = /^\[([0-9a-f:.]+)\]:(\d+)$/.exec(s) ?? /^([0-9.]+):(\d+)$/.exec(s);
  return m !== null && isIP(m[1]!) && isPort(m[2]!);
};
const MARK = /^0x[0-9a-f]{1,8}(\/0x[0-9a-f]{1,8})?$/;

type Check = (v: string) => boolean;
/** Option -> the checks of its arguments (one per argument). */
const OPTIONS: Record<string, Check[]> = {
  "-m": [(v) => MODULES.has(v)],
  "-p": [(v) => /^(tcp|udp|sctp)$/.test(v)],
  "-s": [isCIDR],
  "-d": [isCIDR],
  "-i": [(v) => /^[a-zA-Z0-9._+-]{1,15}$/.test(v)],
  "-o": [(v) => /^[a-zA-Z0-9._+-]{1,15}$/.test(v)],
  "--comment": [commentOK],
  "--dport": [(v) => v.split(":").every(isPort)],
  "--sport": [(v) => v.split(":").every(isPort)],
  "--dports": [(v) => v.split(",").every((p) => p.split(":").every(isPort))],
  "--dst-type": [(v) => /^[A-Z]+$/.test(v)],
  "--src-type": [(v) => /^[A-Z]+$/.test(v)],
  "--limit-iface-in": [],
  "--limit-iface-out": [],
  "--ctstate": [(v) => /^[A-Z]+(,[A-Z]+)*$/.test(v)],
  "--mark": [(v) => MARK.test(v)],
  "--nfacct-name": [(v) => /^[a-z_]{1,31}$/.test(v)],
  "--mode": [(v) => v === "random"],
  "--probability": [(v) => /^[01]\.\d{1,12}$/.test(v)],
  "--name": [(v) => KUBE_CHAIN.test(v)],
  "--set": [],
  "--rcheck": [],
  "--reap": [],
  "--rsource": [],
  "--seconds": [(v) => /^\d{1,6}$/.test(v)],
  "--mask": [isIP],
  "--match-set": [(v) => /^KUBE-[A-Z0-9-]{1,26}$/.test(v), (v) => /^(src|dst)(,(src|dst)){0,2}$/.test(v)],
  "--to-destination": [isHostPort],
  "--set-xmark": [(v) => MARK.test(v)],
  "--or-mark": [(v) => MARK.test(v)],
  "--xor-mark": [(v) => MARK.test(v)],
  "--random-fully": [],
  "--reject-with": [(v) => /^[a-z0-9-]{1,40}$/.test(v)],
  "--vaddr": [isCIDR],
  "--vproto": [(v) => /^(tcp|udp|sctp|\d{1,3})$/.test(v)],
  "--vport": [isPort],
  "--vdir": [(v) => /^(ORIGINAL|REPLY)$/.test(v)],
  "--vmethod": [(v) => /^(GATE|IPIP|MASQ)$/.test(v)],
  "--physdev-is-in": [],
  "--physdev-is-bridged": [],
};

/** xt_comment keeps 255 bytes; the text must be one printable line. */
function commentOK(v: string): boolean {
  return v.length > 0 && bytes(v) <= 255 && !CONTROL.test(v);
}

/**
 * Splits one restore line into words as iptables-restore does (xtables' add_param_to_argv):
 * whitespace separates, double quotes group, and inside quotes a backslash takes the next
 * character literally. Undefined when a quote is left open (the tool refuses the line).
 */
export function restoreWords(line: string): string[] | undefined {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quoted = false;
  let escaped = false;
  for (const ch of line) {
    if (quoted) {
      if (escaped) {
        word += ch;
        escaped = false;
      } else if (ch === "\\") escaped = true;
      else if (ch === '"') {
        quoted = false;
        // A closing quote ends the word, as it does in xtables.
        words.push(word);
        word = "";
        inWord = false;
      } else word += ch;
      continue;
    }
    if (ch === '"') {
      quoted = true;
      inWord = true;
    } else if (ch === " " || ch === "\t") {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (quoted) return undefined;
  if (inWord) words.push(word);
  return words;
}

/**
 * The match and target part of one rule (after the chain). `jumpOK` judges the -j/-g target;
 * returns the violations and the target.
 */
function ruleViolations(words: readonly string[], jumpOK: (target: string) => string | undefined): string[] {
  const out: string[] = [];
  let i = 0;
  let jumps = 0;
  while (i < words.length) {
    let w = words[i]!;
    if (w === "!") {
      i++;
      w = words[i] ?? "";
      if (!(w in OPTIONS) || w === "-m" || w === "--comment") {
        out.push(`"!" before ${show(w)}`);
        break;
      }
    }
    if (w === "-j" || w === "-g") {
      const target = words[i + 1] ?? "";
      const bad = jumpOK(target);
      if (bad) out.push(bad);
      jumps++;
      i += 2;
      continue;
    }
    const checks = OPTIONS[w];
    if (!checks) {
      out.push(`unknown word ${show(w)}`);
      break;
    }
    for (const [k, check] of checks.entries()) {
      const v = words[i + 1 + k];
      if (v === undefined || !check(v)) {
        out.push(`bad value ${v === undefined ? "(none)" : show(v)} for ${w}`);
        return out;
      }
    }
    i += 1 + checks.length;
  }
  if (jumps > 1) out.push(`${jumps} targets in one rule`);
  return out;
}

const targetOK =
  (declared: ReadonlySet<string>) =>
  (t: string): string | undefined => {
    if (TARGETS.has(t)) return undefined;
    if (KUBE_CHAIN.test(t) && declared.has(t)) return undefined;
    return `jump to ${show(t)}, which is neither a standard target nor a chain declared in its table`;
  };

/** Chains kube-proxy may expect to exist without declaring them in the same input. */
const COMMON_CHAINS = [
  "KUBE-MARK-MASQ",
  "KUBE-MARK-DROP",
  "KUBE-POSTROUTING",
  "KUBE-SERVICES",
  "KUBE-NODEPORTS",
];

/** Every line of an iptables-restore input that is not one our proxiers write. */
export function iptablesRestoreViolations(input: string): string[] {
  const out: string[] = [];
  const lines = input.split("\n");
  if (lines.at(-1) === "") lines.pop();
  let table: string | undefined;
  let declared = new Set<string>();
  // Jumps may point at a chain declared further down the same table.
  const pending: { n: number; line: string; words: string[] }[] = [];
  const flush = () => {
    for (const p of pending) {
      for (const v of ruleViolations(p.words, targetOK(new Set([...declared, ...COMMON_CHAINS]))))
        out.push(`line ${p.n}: ${v}: ${show(p.line)}`);
    }
    pending.length = 0;
  };
  for (const [idx, line] of lines.entries()) {
    const n = idx + 1;
    const bad = (why: string) => out.push(`line ${n}: ${why}: ${show(line)}`);
    if (CONTROL.test(line)) {
      bad("control or broken character");
      continue;
    }
    if (line.startsWith("*")) {
      if (table) bad("table opened before COMMIT");
      table = line.slice(1);
      if (!TABLES.has(table)) bad("unknown table");
      declared = new Set();
      continue;
    }
    if (line === "COMMIT") {
      if (!table) bad("COMMIT outside a table");
      flush();
      table = undefined;
      continue;
    }
    if (!table) {
      bad("line outside a table");
      continue;
    }
    const decl = /^:(\S+) - \[0:0\]$/.exec(line);
    if (decl) {
      if (!KUBE_CHAIN.test(decl[1]!)) bad("declares a chain that is not ours");
      declared.add(decl[1]!);
      continue;
    }
    const words = restoreWords(line);
    if (!words) {
      bad("unterminated quote");
      continue;
    }
    const [op, chain = "", ...rest] = words;
    if (op === "-X" || op === "-F") {
      if (!KUBE_CHAIN.test(chain) || rest.length > 0) bad(`${op} of a chain that is not ours`);
      continue;
    }
    if (op === "-A") {
      if (!KUBE_CHAIN.test(chain)) bad("appends to a chain that is not ours");
      else pending.push({ n, line, words: rest });
      continue;
    }
    if (op === "-I" || op === "-D") {
      // Only the jump from a built-in chain into one of ours.
      if (!BUILTIN_CHAINS.has(chain)) bad(`${op} into a chain that is not built in`);
      else
        for (const v of ruleViolations(rest, (t) =>
          KUBE_CHAIN.test(t) ? undefined : `jump from ${chain} to ${show(t)}`,
        ))
          bad(v);
      continue;
    }
    bad("not a line kube-proxy writes");
  }
  flush();
  if (table) out.push(`table ${table} has no COMMIT`);
  return out;
}

/** An iptables/ip6tables command line (not a restore): chain housekeeping and the jump rules. */
export function iptablesArgvViolations(args: readonly string[]): string[] {
  const rest: string[] = [];
  let table = "filter";
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "-w" || a === "--wait") {
      if (/^\d+$/.test(args[i + 1] ?? "")) i++;
    } else if (a === "-t") {
      table = args[++i] ?? "";
    } else rest.push(a);
  }
  const out: string[] = [];
  if (!TABLES.has(table)) out.push(`unknown table ${show(table)}`);
  for (const a of rest) if (CONTROL.test(a)) out.push(`control or broken character in argument ${show(a)}`);
  const [op = "", chain = "", ...rule] = rest;
  if (["-N", "-X", "-F"].includes(op)) {
    if (!KUBE_CHAIN.test(chain) || rule.length > 0)
      out.push(`${op} of a chain that is not ours: ${show(chain)}`);
  } else if (["-I", "-A", "-D", "-C"].includes(op)) {
    if (!BUILTIN_CHAINS.has(chain)) out.push(`${op} into ${show(chain)}, not a built-in chain`);
    out.push(
      ...ruleViolations(rule, (t) => (KUBE_CHAIN.test(t) ? undefined : `jump from ${chain} to ${show(t)}`)),
    );
    if (!rule.includes("-j")) out.push("a rule with no jump");
  } else out.push(`not a command kube-proxy runs: ${show(args.join(" "))}`);
  return out;
}

// ---------------------------------------------------------------- nft

/** Words nft reads as keywords in the statements we write. */
const NFT_WORDS = new Set([
  ...["type", "hook", "priority", "comment", "flags", "timeout", "interval", "dynamic", "size", "policy"],
  ...["filter", "nat", "prerouting", "postrouting", "input", "output", "forward", "accept", "drop"],
  ...["reject", "return", "jump", "goto", "ct", "state", "new", "status", "dnat", "snat", "to", "masquerade"],
  ...["fully-random", "random", "persistent", "ip", "ip6", "saddr", "daddr", "meta", "l4proto", "th"],
  ...["dport", "sport", "vmap", "map", "mark", "set", "and", "or", "xor", "numgen", "mod", "fib", "type"],
  ...["local", "update", "add", "counter", "name", "packets", "bytes", "addr", "port", "tcp", "udp", "sctp"],
  ...["ipv4_addr", "ipv6_addr", "inet_proto", "inet_service", "verdict", "iifname", "oifname", "with"],
  ...["icmp", "icmpv6", "admin-prohibited", "port-unreachable", "host-unreachable", "established"],
  ...["related", "invalid", "untracked", "notrack", "log", "prefix", "nfproto", "ipv4", "ipv6", "elements"],
  ...["constant", "s", "m", "h", "d", "limit", "rate", "over", "second", "burst", "packet", "continue"],
  // The concatenation operator, a word of its own between spaces.
  ".",
]);

/** Names of our chains, sets, maps and counters: nft's unquoted identifier, and a known shape. */
const NFT_IDENT = /^[a-zA-Z_.][a-zA-Z0-9/\\_.-]*$/;

interface NftToken {
  readonly kind: "word" | "string" | "punct";
  readonly text: string;
}

/**
 * Splits one nft input line into tokens the way nft's scanner does for what we write: quoted
 * strings run to the next '"', '#' starts a comment, '{ } ; : , . @ ! =' are punctuation.
 * Returns the tokens or the reason the line cannot be ours.
 */
function nftTokens(line: string): NftToken[] | string {
  const out: NftToken[] = [];
  let i = 0;
  while (i < line.length) {
    const ch = line[i]!;
    if (ch === " " || ch === "\t") {
      i++;
    } else if (ch === '"') {
      const end = line.indexOf('"', i + 1);
      if (end < 0) return "unterminated string";
      out.push({ kind: "string", text: line.slice(i + 1, end) });
      i = end + 1;
    } else if (ch === "#") {
      return "a '#' comment";
    } else if ("{};:,@=".includes(ch)) {
      out.push({ kind: "punct", text: ch });
      i++;
    } else if (ch === "!" && line[i + 1] === "=") {
      out.push({ kind: "punct", text: "!=" });
      i += 2;
    } else {
      let j = i;
      while (
        j < line.length &&
        !' \t"#{};,@='.includes(line[j]!) &&
        !(line[j] === "!" && line[j + 1] === "=")
      )
        j++;
      // ':' separates "key : verdict" but is inside IPv6 addresses and "ip:port".
      out.push({ kind: "word", text: line.slice(i, j) });
      i = j;
    }
  }
  return out;
}

const NFT_NUMBER = /^(-?\d+|0x[0-9a-f]+)$/;
/** An address, a CIDR, ip:port or [ip6]:port, or a '.'-joined tuple member like "tcp". */
function nftValueOK(w: string): boolean {
  if (NFT_NUMBER.test(w)) return true;
  if (isCIDR(w) || isHostPort(w)) return true;
  // "a.b.c.d:port" and IPv6 with ":" arrive as one word; so do "1s"-style timeouts.
  if (/^\d+[smhd]$/.test(w)) return true;
  return false;
}

const NFT_VERBS = new Set(["add", "create", "flush", "delete", "destroy", "insert", "replace"]);
const NFT_OBJECTS = new Set(["table", "chain", "rule", "set", "map", "element", "counter"]);

/**
 * Every line of an nft -f input that is not one our nftables proxier writes: each line is one
 * command on table `kube-proxy` of family ip or ip6 (never `flush ruleset`, never another table),
 * strings only as comments or counter names (printable, at most 128 bytes), and every other word
 * a keyword, a value, or a name of ours.
 */
export function nftViolations(input: string): string[] {
  const out: string[] = [];
  const lines = input.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const tokenized = lines.map((line) =>
    CONTROL.test(line) ? "control or broken character" : nftTokens(line),
  );
  // A bare name is one a line of this input declares (add chain / set / map / counter NAME).
  const declared = new Set<string>();
  for (const tokens of tokenized) {
    if (typeof tokens === "string") continue;
    const [verb, object, , , name] = tokens;
    if ((verb?.text === "add" || verb?.text === "create") && name?.kind === "word")
      if (["chain", "set", "map", "counter"].includes(object?.text ?? "")) declared.add(name.text);
  }
  for (const [idx, line] of lines.entries()) {
    const bad = (why: string) => out.push(`line ${idx + 1}: ${why}: ${show(line)}`);
    const tokens = tokenized[idx]!;
    if (typeof tokens === "string") {
      bad(tokens);
      continue;
    }
    const [verb, object, family, table] = tokens.map((t) => t.text);
    if (!verb || !NFT_VERBS.has(verb) || !object || !NFT_OBJECTS.has(object)) {
      bad("not a command kube-proxy writes");
      continue;
    }
    if (family !== "ip" && family !== "ip6") {
      bad(`family ${show(family ?? "")}`);
      continue;
    }
    if (table !== "kube-proxy") {
      bad(`table ${show(table ?? "")}, not kube-proxy`);
      continue;
    }
    if (object === "table" && verb !== "add" && verb !== "create") bad(`${verb} table`);
    let body = tokens.slice(4);
    if (object !== "table") {
      const name = body[0];
      if (name?.kind !== "word" || !NFT_IDENT.test(name.text)) {
        bad(`${object} name ${show(name?.text ?? "")}`);
        continue;
      }
      if ((object === "rule" || object === "element") && !declared.has(name.text))
        bad(`${object} in ${show(name.text)}, which no line declares`);
      body = body.slice(1);
    }
    // A declaration or a flush/delete takes at most one "{ ... }" after the name; a rule or an
    // element takes the words after it.
    if (object !== "rule" && object !== "element" && body.length > 0) {
      if (body[0]?.text !== "{" || body.at(-1)?.text !== "}") bad(`words after the ${object} name`);
    }
    let depth = 0;
    for (const [k, t] of body.entries()) {
      if (t.kind === "punct") {
        if (t.text === "{") depth++;
        else if (t.text === "}") depth--;
        else if (t.text === ";" && depth === 0) bad("';' outside braces (a second command)");
        if (depth < 0) bad("unbalanced '}'");
        continue;
      }
      const prev = body[k - 1]?.text;
      if (t.kind === "string") {
        if (prev !== "comment" && prev !== "name") bad(`a string after ${show(prev ?? "")}`);
        else if (bytes(t.text) > 128) bad(`a ${prev} of ${bytes(t.text)} bytes`);
        else if (t.text.length === 0) bad(`an empty ${prev}`);
        const next = body[k + 1]?.text;
        if (prev === "comment" && next !== undefined && ![";", "}", ":"].includes(next))
          bad(`${show(next)} after a comment`);
        continue;
      }
      if (NFT_WORDS.has(t.text) || nftValueOK(t.text) || declared.has(t.text)) continue;
      bad(`unknown word ${show(t.text)}`);
    }
    if (depth !== 0) bad("unbalanced '{'");
  }
  return out;
}

// ---------------------------------------------------------------- ipset

/** Our set names: KUBE- then upper-case letters, digits and '-'; ipset allows 31 characters. */
const KUBE_SET = /^KUBE-[A-Z0-9-]{1,26}$/;
const SET_TYPES = /^(hash:ip|hash:ip,port|hash:ip,port,ip|hash:ip,port,net|hash:net|bitmap:port)$/;
const SET_ENTRY = /^[0-9a-f:.,/\-[\]]+$|^[0-9a-f:.,/]+,(tcp|udp|sctp):\d+(,[0-9a-f:./]+)?$/;

/** Every line of an `ipset restore` input that is not one our ipvs proxier writes. */
export function ipsetViolations(input: string): string[] {
  const out: string[] = [];
  const lines = input.split("\n");
  if (lines.at(-1) === "") lines.pop();
  for (const [idx, line] of lines.entries()) {
    const bad = (why: string) => out.push(`line ${idx + 1}: ${why}: ${show(line)}`);
    if (CONTROL.test(line)) {
      bad("control or broken character");
      continue;
    }
    const words = line.split(" ");
    const [cmd = "", name = "", ...rest] = words;
    if (!KUBE_SET.test(name)) {
      bad(`set ${show(name)} is not ours`);
      continue;
    }
    switch (cmd) {
      case "create": {
        const [type = "", ...opts] = rest;
        if (!SET_TYPES.test(type)) bad(`set type ${show(type)}`);
        const optsText = opts.join(" ");
        if (
          !/^((family inet6?|hashsize \d+|maxelem \d+|range \d+-\d+|timeout \d+|comment|-exist) ?)*$/.test(
            optsText,
          )
        )
          bad("unknown create options");
        break;
      }
      case "add":
      case "del": {
        const [entry = "", ...opts] = rest;
        if (!SET_ENTRY.test(entry)) bad(`entry ${show(entry)}`);
        if (opts.some((o) => o !== "-exist")) bad("unknown entry options");
        break;
      }
      case "flush":
      case "destroy":
        if (rest.length > 0) bad("extra words");
        break;
      case "swap":
        if (rest.length !== 1 || !KUBE_SET.test(rest[0]!)) bad("swap with a set that is not ours");
        break;
      default:
        bad(`command ${show(cmd)}`);
    }
  }
  return out;
}

// ---------------------------------------------------------------- ipvsadm, ip

const IPVS_KINDS = new Set([
  "add-service",
  "edit-service",
  "delete-service",
  "add-server",
  "edit-server",
  "delete-server",
]);

/** Every line of an `ipvsadm --restore` input that ipvsadm 1.31 would refuse or that is not ours. */
export function ipvsadmViolations(input: string): string[] {
  const out: string[] = [];
  const lines = input.split("\n");
  if (lines.at(-1) === "") lines.pop();
  for (const [idx, line] of lines.entries()) {
    const bad = (why: string) => out.push(`line ${idx + 1}: ${why}: ${show(line)}`);
    if (CONTROL.test(line.replace(/\r$/, ""))) {
      bad("control or broken character");
      continue;
    }
    const parsed = parseIpvsadmArgs(restoreLineWords(line));
    if (!parsed.ok) bad(`ipvsadm refuses it (${parsed.message.trim()})`);
    else if (!IPVS_KINDS.has(parsed.command.kind)) bad(`command ${parsed.command.kind}`);
  }
  return out;
}

/** Every line of an `ip -batch` input that is not an address change on kube-ipvs0. */
export function ipBatchViolations(input: string): string[] {
  const out: string[] = [];
  const lines = input.split("\n");
  if (lines.at(-1) === "") lines.pop();
  for (const [idx, line] of lines.entries()) {
    const m = /^(?:address|addr) (add|del) (\S+) dev kube-ipvs0$/.exec(line);
    if (!m || !isCIDR(m[2]!) || !m[2]!.includes("/")) out.push(`line ${idx + 1}: ${show(line)}`);
  }
  return out;
}

// ---------------------------------------------------------------- every command

/** The violations of one recorded command, whichever tool it is for. */
export function commandViolations(c: RecordedCommand): string[] {
  const program = programOf(c);
  const args = c.argv.slice(1);
  const stdin = c.stdin ?? "";
  const where = (vs: string[]) => vs.map((v) => `${c.argv.join(" ")}: ${v}`);
  if (IPTABLES_RESTORE.test(program)) {
    const opts = args.filter((a) => !["-w", "5", "--noflush", "--counters"].includes(a));
    return where([...opts.map((o) => `option ${show(o)}`), ...iptablesRestoreViolations(stdin)]);
  }
  if (IPTABLES_CLI.test(program)) return where(iptablesArgvViolations(args));
  switch (program) {
    case "nft":
      return where(args.join(" ") === "-f -" ? nftViolations(stdin) : [`arguments ${show(args.join(" "))}`]);
    case "ipset":
      return where(args[0] === "restore" ? ipsetViolations(stdin) : ipsetViolations(args.join(" ")));
    case "ipvsadm":
      return where(
        args.join(" ") === "--restore" ? ipvsadmViolations(stdin) : ipvsadmViolations(args.join(" ")),
      );
    case "ip": {
      if (args.join(" ") === "-force -batch -") return where(ipBatchViolations(stdin));
      const line = args.join(" ");
      return /^link (add (name )?kube-ipvs0 type dummy|set kube-ipvs0 up|del (dev )?kube-ipvs0)$/.test(
        line,
      ) || /^-?\S* ?(address|addr) (add|del) \S+ dev kube-ipvs0$/.test(line)
        ? []
        : where([`arguments ${show(line)}`]);
    }
    case "nfacct":
      return args[0] === "add" && /^[a-z_]{1,31}$/.test(args[1] ?? "") && args.length === 2
        ? []
        : where([`arguments ${show(args.join(" "))}`]);
    case "conntrack":
      return args.every((a) => /^[-a-zA-Z0-9.:]+$/.test(a))
        ? []
        : where([`arguments ${show(args.join(" "))}`]);
    default:
      return where([`a program kube-proxy does not run here: ${show(program)}`]);
  }
}

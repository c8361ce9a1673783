// A single-pass reader of iptables-save output. Rules are kept as raw lines: callers want chain
// names (stale-chain cleanup) and rule counts far more often than parsed matches, and a 30 MB
// dump must not be tokenised to answer that.

export interface SavedChain {
  readonly name: string;
  /** "ACCEPT"/"DROP" for built-in chains, "-" for user chains. */
  policy: string;
  /** "[packets:bytes]" from the chain line, as numbers. */
  packets: number;
  bytes: number;
  /** Rule lines as printed ("-A CHAIN ..."), counter prefixes ("[1:2] ") removed. */
  readonly rules: string[];
}

export interface SavedTable {
  readonly name: string;
  /** Chains in the order their ":" lines appear. */
  readonly chains: Map<string, SavedChain>;
}

export type SavedTables = Map<string, SavedTable>;

const COLON = 58; // ':'
const STAR = 42; // '*'
const DASH = 45; // '-'
const BRACKET = 91; // '['

function parseChainLine(line: string): SavedChain {
  // ":NAME POLICY [p:b]"
  const sp1 = line.indexOf(" ");
  const name = sp1 < 0 ? line.slice(1) : line.slice(1, sp1);
  const sp2 = sp1 < 0 ? -1 : line.indexOf(" ", sp1 + 1);
  const policy = sp1 < 0 ? "-" : line.slice(sp1 + 1, sp2 < 0 ? line.length : sp2);
  let packets = 0;
  let bytes = 0;
  if (sp2 >= 0) {
    const m = /^\[(\d+):(\d+)\]/.exec(line.slice(sp2 + 1));
    if (m) {
      packets = Number(m[1]);
      bytes = Number(m[2]);
    }
  }
  return { name, policy, packets, bytes, rules: [] };
}

// "-A CHAIN ..." -> "CHAIN"
function ruleChain(line: string): string {
  const start = line.indexOf(" ") + 1;
  const end = line.indexOf(" ", start);
  return end < 0 ? line.slice(start) : line.slice(start, end);
}

/** Parses iptables-save text into tables -> chains -> rule lines. Comments and blank lines are skipped. */
export function parseIptablesSave(text: string): SavedTables {
  const tables: SavedTables = new Map();
  let table: SavedTable | undefined;
  // Rules of one chain are contiguous in iptables-save output; remember the last one looked up.
  let lastChain: SavedChain | undefined;
  let start = 0;
  const len = text.length;
  while (start < len) {
    let end = text.indexOf("\n", start);
    if (end < 0) end = len;
    let line = text.slice(start, end);
    start = end + 1;
    if (line.endsWith("\r")) line = line.slice(0, -1);
    const c = line.charCodeAt(0);
    if (c === DASH || c === BRACKET) {
      if (!table) continue;
      if (c === BRACKET) {
        const close = line.indexOf("] ");
        if (close < 0) continue;
        line = line.slice(close + 2);
      }
      if (!line.startsWith("-A ")) continue;
      const name = ruleChain(line);
      if (lastChain?.name !== name) {
        lastChain = table.chains.get(name);
        if (!lastChain) {
          // A rule for an undeclared chain: record the chain rather than lose the rule.
          lastChain = { name, policy: "-", packets: 0, bytes: 0, rules: [] };
          table.chains.set(name, lastChain);
        }
      }
      lastChain.rules.push(line);
    } else if (c === COLON) {
      if (!table) continue;
      const chain = parseChainLine(line);
      table.chains.set(chain.name, chain);
    } else if (c === STAR) {
      const name = line.slice(1).trim();
      table = tables.get(name) ?? { name, chains: new Map() };
      tables.set(name, table);
      lastChain = undefined;
    } else if (line === "COMMIT") {
      table = undefined;
      lastChain = undefined;
    }
  }
  return tables;
}

/** Names of the chains declared in one table of a dump (upstream's GetChainsFromTable). */
export function chainsInTable(tables: SavedTables, table: string): Set<string> {
  return new Set(tables.get(table)?.chains.keys() ?? []);
}

/** Number of rule lines in a dump, counted the way iptables-wrappers compares backends. */
export function countRuleLines(text: string): number {
  let n = 0;
  if (text.charCodeAt(0) === DASH) n++;
  for (let i = text.indexOf("\n-"); i >= 0; i = text.indexOf("\n-", i + 2)) n++;
  return n;
}

// Typed client for the nft tool, bound to one table as upstream's knftables is: a transaction is
// one `nft -f -` (or `nft --check -f -`), reads list the names of one kind of object (chains
// from nft's text, sets and maps from its JSON), and the table-level calls serve --cleanup. A
// host without nft is an answer, not an error.

import { type Exec, type ExecInput, type ExecResult, rereadableInputText } from "../../exec/types.ts";
import { type Logger, nullLogger } from "../../log/logger.ts";
import { NftError } from "./errors.ts";
import { nftIdentifier } from "./script-text.ts";
import type { NftClient, NftFamily, NftListKind, NftTable, NftTransactionLike } from "./types.ts";

const NOT_INSTALLED = 127;
const DEFAULT_TIMEOUT_MS = 30_000;
const VERSION_TIMEOUT_MS = 10_000;
const TABLE_LINE = /^table\s+(ip|ip6|inet|arp|bridge|netdev)\s+(\S+)\s*$/;

/** `nft list tables` output: "table ip kube-proxy" per line. */
export function parseNftTables(text: string): NftTable[] {
  const out: NftTable[] = [];
  for (const line of text.split("\n")) {
    const m = TABLE_LINE.exec(line.trim());
    if (m) out.push({ family: m[1] as NftFamily, name: m[2]! });
  }
  return out;
}

/** "nftables v1.0.6 (Lester Gooch #5)" -> "1.0.6"; undefined when no version is present. */
export function parseNftVersion(output: string): string | undefined {
  return /\bv(\d+(?:\.\d+)+)\b/.exec(output)?.[1];
}

/** The JSON object key nft uses for each kind `list` reads. */
const OBJECT_KEY: Readonly<Record<NftListKind, "chain" | "set" | "map">> = {
  chains: "chain",
  sets: "set",
  maps: "map",
};

/**
 * Names of one kind of object in one table from `nft --json list chains|sets|maps FAMILY`
 * (which covers every table of the family). Throws on output that is not nft's JSON.
 */
export function parseNftListNames(json: string, kind: NftListKind, table: string): string[] {
  const doc = JSON.parse(json) as { nftables?: unknown };
  if (!doc || !Array.isArray(doc.nftables)) throw new Error(`nft --json list ${kind}: no "nftables" array`);
  const key = OBJECT_KEY[kind];
  const names: string[] = [];
  for (const entry of doc.nftables as Record<string, { table?: unknown; name?: unknown } | undefined>[]) {
    const obj = entry[key];
    if (obj && obj.table === table && typeof obj.name === "string") names.push(obj.name);
  }
  return names;
}

/**
 * Chain names of one table from `nft list chains FAMILY` (text, which covers every table of the
 * family): "table FAMILY NAME {" opens a table, "\tchain NAME {" names a chain in it. Read line
 * by line without splitting: a 10,000-Service table lists 110,000 chains, and nft's JSON of them
 * is twice the text and, parsed, an object per chain.
 */
export function parseNftChainNames(text: string, family: NftFamily, table: string): string[] {
  const header = `table ${family} ${table} {`;
  const names: string[] = [];
  let inTable = false;
  for (let from = 0; from < text.length; ) {
    let to = text.indexOf("\n", from);
    if (to < 0) to = text.length;
    if (text.startsWith("table ", from)) inTable = text.slice(from, to).trimEnd() === header;
    else if (inTable && text.startsWith("\tchain ", from)) {
      const open = text.lastIndexOf(" {", to);
      if (open > from + 7) {
        const name = text.slice(from + 7, open);
        names.push(name.length > 1 && name.startsWith('"') && name.endsWith('"') ? name.slice(1, -1) : name);
      }
    }
    from = to + 1;
  }
  return names;
}

export interface NftClientOptions {
  exec: Exec;
  /** The table the client works in; "ip kube-proxy" by default. */
  family?: NftFamily;
  table?: string;
  /** Bound on every run except the version probe. */
  timeoutMs?: number;
  logger?: Logger;
}

export function createNftClient(opts: NftClientOptions): NftClient {
  const family = opts.family ?? "ip";
  const table = nftIdentifier(opts.table ?? "kube-proxy", "table name");
  const bound = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const log = (opts.logger ?? nullLogger).named("nft");
  const run = (args: string[], stdin?: ExecInput): Promise<ExecResult> =>
    opts.exec.run({ cmd: "nft", args, timeoutMs: bound, ...(stdin !== undefined ? { stdin } : {}) });

  async function apply(args: string[], tx: NftTransactionLike): Promise<void> {
    if (tx.isEmpty?.() ?? tx.size === 0) return;
    const input = tx.pieces?.() ?? tx.render();
    log.v(4).info("Running nft", { args: args.join(" "), operations: tx.size });
    const res = await run(args, input);
    if (res.code === 0) return;
    // The failing lines are read back from the input only now, on the error path.
    const err = new NftError(args, res.code, res.stderr || res.stdout, rereadableInputText(input));
    log.error("nft failed", { err: err.message, line: err.line });
    throw err;
  }

  return {
    family,
    table,
    run: (tx) => apply(["-f", "-"], tx),
    check: (tx) => apply(["--check", "-f", "-"], tx),

    async list(kind) {
      // Chains as text (see parseNftChainNames); --terse leaves out set and map elements.
      const args = kind === "chains" ? ["list", kind, family] : ["--terse", "--json", "list", kind, family];
      const res = await run(args);
      if (res.code !== 0) throw new NftError(args, res.code, res.stderr || res.stdout);
      return kind === "chains"
        ? parseNftChainNames(res.stdout, family, table)
        : parseNftListNames(res.stdout, kind, table);
    },

    async listTableJson() {
      const args = ["--json", "list", "table", family, table];
      const res = await run(args);
      if (res.code === 0) return res.stdout;
      const err = new NftError(args, res.code, res.stderr || res.stdout);
      if (err.isNotFound()) return undefined;
      throw err;
    },

    async version() {
      const args = ["--version"];
      const res = await opts.exec.run({ cmd: "nft", args, timeoutMs: VERSION_TIMEOUT_MS });
      if (res.code === NOT_INSTALLED) return undefined;
      if (res.code !== 0) throw new NftError(args, res.code, res.stderr || res.stdout);
      const version = parseNftVersion(res.stdout);
      if (version === undefined) {
        throw new NftError(
          args,
          res.code,
          `cannot parse nft version from ${JSON.stringify(res.stdout.trim())}`,
        );
      }
      return version;
    },

    async listTables() {
      const args = ["list", "tables"];
      const res = await run(args);
      if (res.code === NOT_INSTALLED) return undefined;
      if (res.code !== 0) throw new NftError(args, res.code, res.stderr || res.stdout);
      return parseNftTables(res.stdout);
    },

    async listTable() {
      const args = ["list", "table", family, table];
      const res = await run(args);
      if (res.code === 0) return res.stdout;
      const err = new NftError(args, res.code, res.stderr || res.stdout);
      if (err.isNotFound()) return undefined;
      throw err;
    },

    async deleteTable(t) {
      // An argument, but nft parses it as it would a script: only a name it reads as one.
      const args = ["delete", "table", t.family, nftIdentifier(t.name, "table name")];
      const res = await run(args);
      if (res.code === 0) return true;
      const err = new NftError(args, res.code, res.stderr || res.stdout);
      if (err.isNotFound()) return false;
      throw err;
    },
  };
}

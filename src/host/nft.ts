// A small typed client for the nft tool: just what cleaning up after upstream's nftables mode
// needs (list the tables, delete one). A host without nft is an answer, not an error.

import type { Exec, ExecResult } from "../exec/types.ts";
import { firstLine } from "./tool-output.ts";

export type NftFamily = "ip" | "ip6" | "inet" | "arp" | "bridge" | "netdev";

export interface NftTable {
  readonly family: NftFamily;
  readonly name: string;
}

export class NftError extends Error {
  override readonly name = "NftError";
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`nft ${args.join(" ")}: exit code ${exitCode}: ${firstLine(stderr)}`);
  }

  /** The table (or other object) named does not exist. */
  get isNotFound(): boolean {
    return /No such file or directory/.test(this.stderr);
  }

  /** The kernel has no nf_tables: there can be nothing to list or delete. */
  get isUnsupported(): boolean {
    return /Operation not supported|Protocol not supported/.test(this.stderr);
  }
}

export interface NftClient {
  /** Every table; undefined when nft is not installed on this host. */
  listTables(): Promise<NftTable[] | undefined>;
  /** Deletes a table with everything in it; false when it did not exist. */
  deleteTable(table: NftTable): Promise<boolean>;
}

const NOT_INSTALLED = 127;
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

export function createNftClient(opts: { exec: Exec; timeoutMs?: number }): NftClient {
  const run = (args: string[]): Promise<ExecResult> =>
    opts.exec.run({ cmd: "nft", args, timeoutMs: opts.timeoutMs ?? 30_000 });
  return {
    async listTables() {
      const args = ["list", "tables"];
      const res = await run(args);
      if (res.code === NOT_INSTALLED) return undefined;
      if (res.code !== 0) throw new NftError(args, res.code, res.stderr || res.stdout);
      return parseNftTables(res.stdout);
    },
    async deleteTable(table) {
      const args = ["delete", "table", table.family, table.name];
      const res = await run(args);
      if (res.code === 0) return true;
      const err = new NftError(args, res.code, res.stderr || res.stdout);
      if (err.isNotFound) return false;
      throw err;
    },
  };
}

// A small typed client for the nft tool: just what cleaning up after upstream's nftables mode
// needs (list the tables, delete one). A host without nft is an answer, not an error.

import type { Exec, ExecResult } from "../../exec/types.ts";
import { NftError } from "./errors.ts";
import type { NftClient, NftFamily, NftTable } from "./types.ts";

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

export function createNftClient(opts: {
  exec: Exec;
  timeoutMs?: number;
}): Pick<NftClient, "listTables" | "deleteTable"> {
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
      if (err.isNotFound()) return false;
      throw err;
    },
  };
}

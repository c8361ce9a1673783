// Typed client for the nfacct tool: the named packet counters the iptables proxier attaches to
// its localhost NodePort rule (-m nfacct --nfacct-name localhost_nps_accepted_pkts) and reads
// for the kubeproxy_iptables_localhost_nodeports_accepted_packets_total metric.

import type { Exec } from "../../exec/types.ts";
import { type Logger, nullLogger } from "../../log/logger.ts";
import { NFACCT_EXISTS, NFACCT_MISSING, NfacctError } from "./errors.ts";
import { MAX_NFACCT_NAME, type NfacctClient, type NfacctObject } from "./types.ts";

// "{ pkts = 00000000000000000012, bytes = 00000000000000000840 } = name;" (quota objects add fields)
const OBJECT_LINE = /\{\s*pkts\s*=\s*(\d+),\s*bytes\s*=\s*(\d+)[^}]*\}\s*=\s*([^;\s]+);/g;

/** Parses `nfacct list` / `nfacct get` output. Counters above 2^53 lose precision (never in practice). */
export function parseNfacctOutput(text: string): NfacctObject[] {
  return [...text.matchAll(OBJECT_LINE)].map((m) => ({
    name: m[3]!,
    packets: Number(m[1]),
    bytes: Number(m[2]),
  }));
}

export interface NfacctClientOptions {
  exec: Exec;
  logger?: Logger;
}

const TIMEOUT_MS = 10_000;

export function createNfacctClient({ exec, logger = nullLogger }: NfacctClientOptions): NfacctClient {
  const log = logger.named("nfacct");
  const run = (args: string[]) => exec.run({ cmd: "nfacct", args, timeoutMs: TIMEOUT_MS });
  const checkName = (name: string) => {
    if (name === "" || name.length > MAX_NFACCT_NAME) {
      throw new Error(`invalid nfacct name ${JSON.stringify(name)}: 1 to ${MAX_NFACCT_NAME} characters`);
    }
  };
  return {
    async available() {
      const res = await run(["list"]);
      if (res.code !== 0)
        log.v(2).info("nfacct is not usable", { code: res.code, stderr: res.stderr.trim() });
      return res.code === 0;
    },
    async ensure(name) {
      checkName(name);
      const res = await run(["add", name]);
      if (res.code === 0 || (res.code === 1 && NFACCT_EXISTS.test(res.stderr))) return;
      throw new NfacctError(["add", name], res.code, res.stderr);
    },
    async get(name) {
      checkName(name);
      const res = await run(["get", name]);
      if (res.code !== 0) {
        if (res.code === 1 && NFACCT_MISSING.test(res.stderr)) return undefined;
        throw new NfacctError(["get", name], res.code, res.stderr);
      }
      const obj = parseNfacctOutput(res.stdout).find((o) => o.name === name);
      if (!obj) throw new NfacctError(["get", name], res.code, `unparseable output: ${res.stdout.trim()}`);
      return { packets: obj.packets, bytes: obj.bytes };
    },
  };
}

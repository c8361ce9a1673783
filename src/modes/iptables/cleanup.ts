// --cleanup for iptables state: every chain kube-proxy (upstream or ours, iptables or ipvs
// mode) creates, and every rule elsewhere that jumps into one. Read from iptables-save rather
// than from a fixed list of jump rules, so rules written by another version go too.

import type { Exec } from "../../exec/types.ts";
import { createIptablesClient } from "../../host/iptables/client.ts";
import { iptablesCommands } from "../../host/iptables/commands.ts";
import { parseIptablesSave, type SavedTable } from "../../host/iptables/save-parser.ts";
import type { IptablesBackend, IptablesClient } from "../../host/iptables/types.ts";
import type { Logger } from "../../log/logger.ts";
import { errText } from "../../util/err-text.ts";
import type { IPFamily } from "../../util/net/family.ts";

/** Fixed-name chains kube-proxy owns, per table (both modes). Kubelet's own chains are absent. */
const OWNED: Readonly<Record<string, readonly string[]>> = {
  nat: [
    "KUBE-SERVICES",
    "KUBE-NODEPORTS",
    "KUBE-POSTROUTING",
    "KUBE-MARK-MASQ",
    "KUBE-PROXY-CANARY",
    "KUBE-NODE-PORT",
    "KUBE-LOAD-BALANCER",
  ],
  filter: [
    "KUBE-SERVICES",
    "KUBE-EXTERNAL-SERVICES",
    "KUBE-FORWARD",
    "KUBE-NODEPORTS",
    "KUBE-NODE-PORT",
    "KUBE-PROXY-FIREWALL",
    "KUBE-PROXY-CANARY",
    "KUBE-IPVS-FILTER",
    "KUBE-IPVS-OUT-FILTER",
    "KUBE-SOURCE-RANGES-FIREWALL",
  ],
  mangle: ["KUBE-PROXY-CANARY"],
};

/** Per-service chains: KUBE-SVC-, KUBE-SVL-, KUBE-EXT-, KUBE-FW-, KUBE-SEP- plus a 16-char hash. */
const SERVICE_CHAIN = /^KUBE-(SVC|SVL|EXT|FW|SEP)-[A-Z2-7]{16}$/;

export function ownedChains(table: SavedTable): string[] {
  const fixed = new Set(OWNED[table.name] ?? []);
  return [...table.chains.keys()].filter((c) => fixed.has(c) || SERVICE_CHAIN.test(c));
}

/** The restore payload removing our chains and the rules that jump to them; "" when clean. */
export function cleanupPayload(saveText: string): string {
  const out: string[] = [];
  for (const table of parseIptablesSave(saveText).values()) {
    const owned = new Set(ownedChains(table));
    if (owned.size === 0) continue;
    out.push(`*${table.name}`);
    // Unlink first: rules in chains we do not own that jump into ours.
    for (const chain of table.chains.values()) {
      if (owned.has(chain.name)) continue;
      for (const rule of chain.rules) {
        const target = / -[jg] (\S+)/.exec(rule)?.[1];
        if (target && owned.has(target)) out.push(rule.replace(/^-A /, "-D "));
      }
    }
    for (const chain of owned) out.push(`:${chain} - [0:0]`);
    for (const chain of owned) out.push(`-X ${chain}`);
    out.push("COMMIT");
  }
  return out.length ? `${out.join("\n")}\n` : "";
}

export interface CleanupResult {
  readonly removedChains: number;
  readonly error?: string;
}

/** Removes our state from one family/backend; safe to run again on a clean host. */
export async function cleanupIptables(client: IptablesClient): Promise<CleanupResult> {
  const payload = cleanupPayload(await client.saveAll());
  if (!payload) return { removedChains: 0 };
  const removedChains = payload.split("\n").filter((l) => l.startsWith("-X ")).length;
  try {
    await client.restoreAll(payload, { noFlush: true, counters: false });
    return { removedChains };
  } catch (err) {
    return { removedChains: 0, error: errText(err) };
  }
}

async function installed(exec: Exec, cmd: string): Promise<boolean> {
  return (await exec.run({ cmd, args: ["--version"], timeoutMs: 10_000 })).code === 0;
}

/** Every installed backend and family, IPv4 and IPv6 of legacy, then of nft; false on a failure. */
export async function cleanupIptablesEverywhere(exec: Exec, log: Logger): Promise<boolean> {
  let ok = true;
  const families: IPFamily[] = ["IPv4", "IPv6"];
  const backends: IptablesBackend[] = ["legacy", "nft"];
  for (const backend of backends) {
    for (const family of families) {
      if (!(await installed(exec, iptablesCommands(family, backend).iptables))) continue;
      const client = createIptablesClient({ exec, family, backend, logger: log });
      const r = await cleanupIptables(client);
      if (r.error) {
        ok = false;
        log.error("Failed to clean up iptables rules", { backend, family, err: r.error });
      } else if (r.removedChains > 0) {
        log.info("Removed kube-proxy iptables chains", { backend, family, chains: r.removedChains });
      }
    }
  }
  return ok;
}

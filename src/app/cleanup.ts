// --cleanup: remove what any kube-proxy (upstream or ours, iptables, ipvs or upstream's nftables
// mode, legacy or nft backend) left on this node, then exit. Idempotent: a second run finds
// nothing to do.

import type { Exec } from "../exec/types.ts";
import { createIptablesClient } from "../host/iptables/client.ts";
import { iptablesCommands } from "../host/iptables/commands.ts";
import type { IptablesBackend } from "../host/iptables/types.ts";
import { createIpvsClient } from "../host/ipvs/client.ts";
import { createNftClient } from "../host/nft.ts";
import type { Logger } from "../log/logger.ts";
import { cleanupIptables } from "../modes/iptables/cleanup.ts";
import { cleanupIpvs } from "../modes/ipvs/cleanup.ts";
import { cleanupNftables, nftablesProxyModeEnabled } from "../modes/nftables/cleanup.ts";
import { errText } from "../util/err-text.ts";
import type { IPFamily } from "../util/net/family.ts";

async function installed(exec: Exec, cmd: string): Promise<boolean> {
  return (await exec.run({ cmd, args: ["--version"], timeoutMs: 10_000 })).code === 0;
}

/** Sets named KUBE-*, destroyed only after the iptables rules that match on them are gone. */
async function cleanupIpsets(exec: Exec, log: Logger): Promise<boolean> {
  const list = await exec.run({ cmd: "ipset", args: ["list", "-n"], timeoutMs: 30_000 });
  if (list.code !== 0) return true; // no ipset tool or no sets: nothing of ours can exist
  let ok = true;
  for (const name of list.stdout.split("\n").filter((n) => n.startsWith("KUBE-"))) {
    const r = await exec.run({ cmd: "ipset", args: ["destroy", name], timeoutMs: 30_000 });
    if (r.code !== 0) {
      ok = false;
      log.error("Failed to destroy ipset", { set: name, err: r.stderr.trim() });
    }
  }
  return ok;
}

async function cleanupDummyDevice(exec: Exec, log: Logger): Promise<boolean> {
  const show = await exec.run({ cmd: "ip", args: ["link", "show", "kube-ipvs0"], timeoutMs: 10_000 });
  if (show.code !== 0) return true;
  const del = await exec.run({ cmd: "ip", args: ["link", "del", "kube-ipvs0"], timeoutMs: 10_000 });
  if (del.code !== 0) log.error("Failed to delete kube-ipvs0", { err: del.stderr.trim() });
  return del.code === 0;
}

async function cleanupVirtualServers(
  exec: Exec,
  excludeCIDRs: readonly string[],
  log: Logger,
): Promise<boolean> {
  try {
    const r = await cleanupIpvs(createIpvsClient({ exec, logger: log }), excludeCIDRs);
    if (r.removed > 0 || r.kept > 0)
      log.info("Removed IPVS virtual servers", { removed: r.removed, keptExcluded: r.kept });
    return true;
  } catch (err) {
    log.error("Failed to clean up IPVS virtual servers", {
      err: errText(err),
    });
    return false;
  }
}

/**
 * At the start of an iptables or ipvs mode run: what upstream's nftables mode left is removed
 * (upstream's platformCleanup). Best effort; failures are logged and the run goes on.
 */
export async function cleanupOtherModes(
  exec: Exec,
  log: Logger,
  featureGates: Readonly<Record<string, boolean>>,
): Promise<void> {
  if (nftablesProxyModeEnabled(featureGates)) await cleanupNftables(createNftClient({ exec }), log);
}

export async function cleanupNode(
  exec: Exec,
  log: Logger,
  excludeCIDRs: readonly string[] = [],
  featureGates: Readonly<Record<string, boolean>> = {},
): Promise<number> {
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
  ok = (await cleanupIpsets(exec, log)) && ok;
  ok = (await cleanupVirtualServers(exec, excludeCIDRs, log)) && ok;
  ok = (await cleanupDummyDevice(exec, log)) && ok;
  if (nftablesProxyModeEnabled(featureGates))
    ok = (await cleanupNftables(createNftClient({ exec }), log)) && ok;
  return ok ? 0 : 1;
}

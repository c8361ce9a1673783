// --cleanup for ipvs mode: its ipsets, every virtual server except those inside
// --ipvs-exclude-cidrs (other software's, which upstream also leaves alone; deleted in one
// batch; a kernel without IPVS has nothing to clean) and the kube-ipvs0 device.

import type { Exec } from "../../exec/types.ts";
import { createIpvsClient } from "../../host/ipvs/client.ts";
import { IpvsError } from "../../host/ipvs/errors.ts";
import type { IpvsChange, IpvsClient } from "../../host/ipvs/types.ts";
import type { Logger } from "../../log/logger.ts";
import { errText } from "../../util/err-text.ts";
import { cidrContains } from "../../util/net/address.ts";

export async function cleanupIpvs(
  ipvs: IpvsClient,
  excludeCIDRs: readonly string[],
): Promise<{ removed: number; kept: number }> {
  let services: Awaited<ReturnType<IpvsClient["read"]>>;
  try {
    services = await ipvs.read();
  } catch (err) {
    if (err instanceof IpvsError && err.kind === "unavailable") return { removed: 0, kept: 0 };
    throw err;
  }
  const excluded = (address: string) => excludeCIDRs.some((cidr) => cidrContains(cidr, address));
  const changes: IpvsChange[] = services
    .filter((s) => !excluded(s.server.address))
    .map((s) => ({ op: "delete-service", key: s.server }));
  if (changes.length > 0) await ipvs.apply(changes);
  return { removed: changes.length, kept: services.length - changes.length };
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

async function cleanupDummyDevice(exec: Exec, log: Logger): Promise<boolean> {
  const show = await exec.run({ cmd: "ip", args: ["link", "show", "kube-ipvs0"], timeoutMs: 10_000 });
  if (show.code !== 0) return true;
  const del = await exec.run({ cmd: "ip", args: ["link", "del", "kube-ipvs0"], timeoutMs: 10_000 });
  if (del.code !== 0) log.error("Failed to delete kube-ipvs0", { err: del.stderr.trim() });
  return del.code === 0;
}

/** ipvs mode's state: the KUBE- ipsets (after the iptables rules that use them), virtual servers, kube-ipvs0. */
export async function cleanupIpvsState(
  exec: Exec,
  log: Logger,
  excludeCIDRs: readonly string[],
): Promise<boolean> {
  let ok = await cleanupIpsets(exec, log);
  ok = (await cleanupVirtualServers(exec, excludeCIDRs, log)) && ok;
  ok = (await cleanupDummyDevice(exec, log)) && ok;
  return ok;
}

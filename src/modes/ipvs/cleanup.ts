// --cleanup for IPVS: delete every virtual server except those inside --ipvs-exclude-cidrs
// (other software's, which upstream also leaves alone), in one batch. A kernel without IPVS
// has nothing to clean.

import { IpvsError } from "../../host/ipvs/errors.ts";
import type { IpvsChange, IpvsClient } from "../../host/ipvs/types.ts";
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

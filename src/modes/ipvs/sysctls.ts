// The kernel settings ipvs mode needs beyond conntrack's: IPVS conntrack and expiry knobs,
// forwarding, conn_reuse_mode on the kernels that need it, and strict ARP when asked for.

import type { ModeSysctls, SysctlSetting } from "../../proxy/sysctls.ts";
import { compareVersions } from "../../util/version.ts";

export const ipvsSysctls: ModeSysctls = (inputs, notes) => {
  const out: SysctlSetting[] = [
    {
      name: "net/ipv4/vs/conntrack",
      value: 1,
      reason: "ipvs: let conntrack see IPVS traffic so masquerade works",
    },
  ];
  // conn_reuse_mode=0 avoids a 1 s stall on port reuse, but only kernels 4.1..5.8 need and
  // accept it; older ones lack the knob and newer ones fixed the stall.
  if (compareVersions(inputs.kernelVersion, "4.1") < 0) {
    notes.push(`kernel ${inputs.kernelVersion} is older than 4.1: net/ipv4/vs/conn_reuse_mode cannot be set`);
  } else if (compareVersions(inputs.kernelVersion, "5.9") < 0) {
    out.push({
      name: "net/ipv4/vs/conn_reuse_mode",
      value: 0,
      reason: "ipvs: avoid connection reuse stalls",
    });
  }
  out.push(
    {
      name: "net/ipv4/vs/expire_nodest_conn",
      value: 1,
      reason: "ipvs: drop connections to removed real servers",
    },
    {
      name: "net/ipv4/vs/expire_quiescent_template",
      value: 1,
      reason: "ipvs: expire affinity to weight-0 servers",
    },
    { name: "net/ipv4/ip_forward", value: 1, reason: "ipvs: forward service traffic" },
  );
  if (inputs.strictARP) {
    out.push(
      {
        name: "net/ipv4/conf/all/arp_ignore",
        value: 1,
        reason: "ipvs strict ARP: answer only for own addresses",
      },
      {
        name: "net/ipv4/conf/all/arp_announce",
        value: 2,
        reason: "ipvs strict ARP: announce best local address",
      },
    );
  }
  return out;
};

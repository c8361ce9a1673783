// Which binaries a client drives. kube-proxy-ts never calls the distro's "iptables" alternative:
// the backend is chosen once (backend.ts) and every call names that backend's binary, so a
// node whose alternatives point elsewhere cannot split our rules across two rule sets.

import type { IPFamily } from "../../util/net/family.ts";
import type { IptablesBackend } from "./types.ts";

export interface IptablesCommands {
  /** e.g. "iptables-nft" or "ip6tables-legacy". */
  readonly iptables: string;
  readonly save: string;
  readonly restore: string;
}

export function familyPrefix(family: IPFamily): "iptables" | "ip6tables" {
  return family === "IPv6" ? "ip6tables" : "iptables";
}

export function iptablesCommands(family: IPFamily, backend: IptablesBackend): IptablesCommands {
  const base = `${familyPrefix(family)}-${backend}`;
  return { iptables: base, save: `${base}-save`, restore: `${base}-restore` };
}

// The node name kube-proxy runs as (upstream nodeutil.GetHostname): --hostname-override when
// set, else the kernel's hostname; trimmed and lower-cased, since Node names are lower-case.

import { hostname as osHostname } from "node:os";

export function resolveNodeName(hostnameOverride?: string, hostname: () => string = osHostname): string {
  // Like upstream, an override of only spaces is an error rather than a fallback to the hostname.
  const raw = hostnameOverride ? hostnameOverride : hostname();
  const name = raw.trim().toLowerCase();
  if (name === "") throw new Error("empty hostname is invalid: set --hostname-override");
  return name;
}

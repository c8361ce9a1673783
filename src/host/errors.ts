// The one base class of every host tool's typed failure (ipset, iptables, ipvsadm, ip, nft,
// conntrack, nfacct, sysctl, kernel, HostState). Callers that only need to know whether the object
// named is missing, or is there already, ask any of them the same two questions.

export abstract class HostToolError extends Error {
  /** The object the command named (set, chain, rule, device, service, sysctl, ...) does not exist. */
  abstract isNotFound(): boolean;
  /** The object the command would create exists already. */
  abstract isExists(): boolean;
}

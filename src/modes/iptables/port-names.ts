// Hash-derived iptables chain names of a service port (KUBE-SVC-, KUBE-SEP-, ...), memoised per
// port: hashing is the costly part of a full sync.

import { EndpointMemo } from "../../proxy/endpoint-memo.ts";
import type { EndpointInfo } from "../../proxy/types.ts";
import { endpointChain, type ServicePortChains, servicePortChains } from "./chains.ts";

/** Hash-derived names of one service port, computed once and reused while the port exists. */
export class ServicePortNames {
  readonly protocol: string;
  readonly chains: ServicePortChains;
  /** The KUBE-SEP- memo, by endpoint IP and port. */
  private readonly endpoints = new EndpointMemo<string>();

  constructor(
    readonly nameString: string,
    protocol: string,
  ) {
    this.protocol = protocol.toLowerCase();
    this.chains = servicePortChains(nameString, this.protocol);
  }

  /** KUBE-SEP- chain of an endpoint; hashing is the costly part of a full sync. */
  endpointChain(ep: EndpointInfo): string {
    let chain = this.endpoints.get(ep.ip, ep.port);
    if (chain === undefined) {
      chain = endpointChain(this.nameString, this.protocol, ep.endpoint);
      this.endpoints.add(ep.ip, ep.port, chain);
    }
    return chain;
  }

  /** Forgets endpoints no longer present, so the memo does not grow with churn. */
  retainEndpoints(endpoints: readonly EndpointInfo[]): void {
    if (this.endpoints.size > endpoints.length) this.endpoints.retain(endpoints);
  }
}

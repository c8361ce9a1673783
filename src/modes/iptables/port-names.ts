// Hash-derived iptables chain names of a service port (KUBE-SVC-, KUBE-SEP-, ...), memoised per
// port: hashing is the costly part of a full sync.

import type { EndpointInfo } from "../../proxy/types.ts";
import { endpointChain, type ServicePortChains, servicePortChains } from "./chains.ts";

/** Up to this many endpoints, a port's chain-name memo is two small arrays instead of a Map. */
const SMALL_MEMO = 32;

/** Hash-derived names of one service port, computed once and reused while the port exists. */
export class ServicePortNames {
  readonly protocol: string;
  readonly chains: ServicePortChains;
  // The KUBE-SEP- memo: endpoints and their chains at the same index, or a Map once there are
  // many. A Map costs ~900 bytes at 10 entries, and a large cluster has one per service port.
  private endpoints: string[] = [];
  private endpointChains: string[] = [];
  private byEndpoint: Map<string, string> | undefined;

  constructor(
    readonly nameString: string,
    protocol: string,
  ) {
    this.protocol = protocol.toLowerCase();
    this.chains = servicePortChains(nameString, this.protocol);
  }

  /** KUBE-SEP- chain of an endpoint ("ip:port"); hashing is the costly part of a full sync. */
  endpointChain(endpoint: string): string {
    let chain = this.known(endpoint);
    if (chain === undefined) {
      chain = endpointChain(this.nameString, this.protocol, endpoint);
      this.remember(endpoint, chain);
    }
    return chain;
  }

  /** Forgets endpoints no longer present, so the memo does not grow with churn. */
  retainEndpoints(endpoints: readonly EndpointInfo[]): void {
    if ((this.byEndpoint?.size ?? this.endpoints.length) <= endpoints.length) return;
    const kept: [string, string][] = [];
    for (const ep of endpoints) {
      const chain = this.known(ep.endpoint);
      if (chain !== undefined) kept.push([ep.endpoint, chain]);
    }
    this.endpoints = [];
    this.endpointChains = [];
    this.byEndpoint = undefined;
    for (const [endpoint, chain] of kept) this.remember(endpoint, chain);
  }

  private known(endpoint: string): string | undefined {
    if (this.byEndpoint) return this.byEndpoint.get(endpoint);
    const i = this.endpoints.indexOf(endpoint);
    return i < 0 ? undefined : this.endpointChains[i];
  }

  private remember(endpoint: string, chain: string): void {
    if (!this.byEndpoint && this.endpoints.length >= SMALL_MEMO) {
      this.byEndpoint = new Map(this.endpoints.map((e, i) => [e, this.endpointChains[i]!]));
      this.endpoints = [];
      this.endpointChains = [];
    }
    if (this.byEndpoint) this.byEndpoint.set(endpoint, chain);
    else {
      this.endpoints.push(endpoint);
      this.endpointChains.push(chain);
    }
  }
}

// Hash-derived iptables chain names of a service port (KUBE-SVC-, KUBE-SEP-, ...), memoised per
// port: hashing is the costly part of a full sync. A port object of its own is kept per service
// port between syncs, so it holds as little as it can: the KUBE-SVC- name (the other three
// per-port chains share its hash and are made from it when written), and the KUBE-SEP- names of
// its endpoints.

import { EndpointMemo } from "../../proxy/endpoint-memo.ts";
import type { EndpointInfo } from "../../proxy/types.ts";
import { lowerProtocol, type Protocol } from "../../util/net/protocol.ts";
import {
  EXT_PREFIX,
  endpointChain,
  FW_PREFIX,
  type ServicePortChains,
  SVL_PREFIX,
  serviceChain,
  siblingChain,
} from "./chains.ts";

/** The memo of a port that has not named an endpoint yet (most ports of a huge Service). */
const NO_ENDPOINTS: readonly never[] = [];

/** Hash-derived names of one service port, computed once and reused while the port exists. */
export class ServicePortNames implements ServicePortChains {
  readonly protocol: string;
  /** KUBE-SVC-: endpoints for Cluster traffic policy. */
  readonly svc: string;
  // The KUBE-SEP- memo: the port's endpoint list as last given to followEndpoints, and the chain
  // of each entry at the same index once named. Its writers walk (subsets of) that list in its
  // order, so a cursor finds an endpoint where the last one was found or a little further: no
  // table keyed per endpoint, which for a million endpoints was ~40 MB. A list of one endpoint
  // keeps its chain (or undefined) itself, not an array of one (48 bytes a port).
  private list: readonly EndpointInfo[] = NO_ENDPOINTS;
  private names: (string | undefined)[] | string | undefined = NO_ENDPOINTS as never[];
  private cursor = 0;

  constructor(
    readonly nameString: string,
    protocol: string,
  ) {
    this.protocol = lowerProtocol(protocol as Protocol);
    this.svc = serviceChain(nameString, this.protocol);
  }

  /** KUBE-SVL-: endpoints for Local traffic policy (made on each call). */
  get svl(): string {
    return siblingChain(SVL_PREFIX, this.svc);
  }
  /** KUBE-EXT-: external destinations (made on each call). */
  get ext(): string {
    return siblingChain(EXT_PREFIX, this.svc);
  }
  /** KUBE-FW-: loadBalancerSourceRanges filtering (made on each call). */
  get fw(): string {
    return siblingChain(FW_PREFIX, this.svc);
  }
  /** The four per-port chains (this object: the three made from KUBE-SVC- when read). */
  get chains(): ServicePortChains {
    return this;
  }

  /** KUBE-SEP- chain of an endpoint; hashing is the costly part of a full sync. */
  endpointChain(ep: EndpointInfo): string {
    const i = this.indexOf(ep);
    if (i < 0) return endpointChain(this.nameString, this.protocol, ep.endpoint);
    let chain = this.nameAt(i);
    if (chain === undefined) {
      chain = endpointChain(this.nameString, this.protocol, ep.endpoint);
      if (Array.isArray(this.names)) this.names[i] = chain;
      else this.names = chain;
    }
    return chain;
  }

  /** The memo's chain of list entry `i`, if named. */
  private nameAt(i: number): string | undefined {
    const names = this.names;
    return Array.isArray(names) ? names[i] : names;
  }

  /**
   * Makes `endpoints` (the port's usable endpoints, each once) the list the memo follows: names
   * of endpoints still present are kept, the others forgotten, so the memo does not grow with
   * churn. An endpoint outside the list is named without being remembered.
   */
  followEndpoints(endpoints: readonly EndpointInfo[]): void {
    if (endpoints === this.list) return;
    this.cursor = 0;
    if (endpoints.length === 0) {
      this.list = NO_ENDPOINTS;
      this.names = NO_ENDPOINTS as never[];
      return;
    }
    const known = new EndpointMemo<string>();
    for (let i = 0; i < this.list.length; i++) {
      const name = this.nameAt(i);
      if (name !== undefined) known.add(this.list[i]!.ip, this.list[i]!.port, name);
    }
    this.list = endpoints;
    const named = (ep: EndpointInfo) => (known.size > 0 ? known.get(ep.ip, ep.port) : undefined);
    this.names = endpoints.length === 1 ? named(endpoints[0]!) : endpoints.map(named);
  }

  // The index of `ep` in the list (the object itself), searched from the cursor on and then
  // from the start; -1 when it is not there.
  private indexOf(ep: EndpointInfo): number {
    const list = this.list;
    const n = list.length;
    let i = this.cursor;
    for (let k = 0; k < n; k++) {
      if (list[i] === ep) {
        this.cursor = i + 1 === n ? 0 : i + 1;
        return i;
      }
      i = i + 1 === n ? 0 : i + 1;
    }
    return -1;
  }
}

// Hash-derived iptables chain names of a service port (KUBE-SVC-, KUBE-SEP-, ...), memoised per
// port: hashing is the costly part of a full sync. A port object of its own is kept per service
// port between syncs, so it holds as little as it can: the KUBE-SVC- name (the other three
// per-port chains share its hash and are made from it when written), and the KUBE-SEP- names of
// its endpoints.

import {
  EMPTY_NAME_MEMO,
  memoAdd,
  memoGet,
  memoRetain,
  memoSize,
  type NameMemo,
} from "../../proxy/netfilter/name-memo.ts";
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

/** Hash-derived names of one service port, computed once and reused while the port exists. */
export class ServicePortNames implements ServicePortChains {
  readonly protocol: string;
  /** KUBE-SVC-: endpoints for Cluster traffic policy. */
  readonly svc: string;
  /** The KUBE-SEP- memo, by endpoint ("ip:port"). */
  private sepChains: NameMemo = EMPTY_NAME_MEMO;

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

  /** KUBE-SEP- chain of an endpoint ("ip:port"); hashing is the costly part of a full sync. */
  endpointChain(endpoint: string): string {
    let chain = memoGet(this.sepChains, endpoint);
    if (chain === undefined) {
      chain = endpointChain(this.nameString, this.protocol, endpoint);
      this.sepChains = memoAdd(this.sepChains, endpoint, chain);
    }
    return chain;
  }

  /** Forgets endpoints no longer present, so the memo does not grow with churn. */
  retainEndpoints(endpoints: readonly EndpointInfo[]): void {
    if (memoSize(this.sepChains) <= endpoints.length) return;
    this.sepChains = memoRetain(
      this.sepChains,
      endpoints.map((ep) => ep.endpoint),
    );
  }
}

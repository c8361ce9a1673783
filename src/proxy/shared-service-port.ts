// The compact form of a service port the model keeps: its own few fields, and a reference to
// one record of the fields every port of its Service shares. A Service may have 100,000 ports:
// a flat object of every field per port cost ~340 bytes each, this ~110.

import type { Protocol } from "../util/net/protocol.ts";
import type { OwnServicePortField, ServicePortInfo, ServicePortName } from "./types.ts";

/** Fields shared by every port of one Service, with the Service's identity. */
export interface ServiceWide extends Omit<ServicePortInfo, OwnServicePortField> {
  readonly namespace: string;
  readonly service: string;
}

/**
 * One port of a Service. The Service-wide fields are getters on the prototype: a spread or
 * JSON.stringify of it sees only its own fields (use plainServicePort for a full copy).
 */
export class SharedServicePort implements ServicePortInfo {
  constructor(
    private readonly wide: ServiceWide,
    /** The Service port's name ("" for an unnamed single port). */
    private readonly portName: string,
    readonly id: string,
    readonly port: number,
    readonly protocol: Protocol,
    readonly nodePort: number,
  ) {}

  /** Made on each read: few readers, and one object per port would double its size. */
  get name(): ServicePortName {
    const w = this.wide;
    return { namespace: w.namespace, name: w.service, port: this.portName, protocol: this.protocol };
  }
  get clusterIPs(): ServicePortInfo["clusterIPs"] {
    return this.wide.clusterIPs;
  }
  get externalIPs(): readonly string[] {
    return this.wide.externalIPs;
  }
  get loadBalancerVIPs(): readonly string[] {
    return this.wide.loadBalancerVIPs;
  }
  get loadBalancerSourceRanges(): readonly string[] {
    return this.wide.loadBalancerSourceRanges;
  }
  get sessionAffinity(): ServicePortInfo["sessionAffinity"] {
    return this.wide.sessionAffinity;
  }
  get externalPolicyLocal(): boolean {
    return this.wide.externalPolicyLocal;
  }
  get internalPolicyLocal(): boolean {
    return this.wide.internalPolicyLocal;
  }
  get healthCheckNodePort(): number {
    return this.wide.healthCheckNodePort;
  }
  get topologyMode(): string {
    return this.wide.topologyMode;
  }
  get trafficDistribution(): string {
    return this.wide.trafficDistribution;
  }
  get serviceType(): ServicePortInfo["serviceType"] {
    return this.wide.serviceType;
  }
  get createdAtMs(): number | undefined {
    return this.wide.createdAtMs;
  }
}

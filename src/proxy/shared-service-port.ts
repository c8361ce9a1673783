// The compact form of a service port the model keeps: its own few fields, and a reference to
// one record of the fields every port of its Service shares. A Service may have 100,000 ports:
// a flat object of every field per port cost ~340 bytes each, this ~100 (its id string included).

import type { Protocol } from "../util/net/protocol.ts";
import type { OwnServicePortField, ServicePortInfo, ServicePortName } from "./types.ts";

/** Every protocol a port may have, by its index in a packed port. */
const PROTOCOLS: readonly Protocol[] = ["TCP", "UDP", "SCTP"];
/** Port numbers are below this (0..65535). */
const PORT_SPAN = 65536;

/** Fields shared by every port of one Service, with the Service's identity. */
export interface ServiceWide extends Omit<ServicePortInfo, OwnServicePortField> {
  readonly namespace: string;
  readonly service: string;
}

/**
 * The reads of a shared service port, on a class of their own: JSC gives every instance of a
 * class whose prototype holds getters room for six fields (64 bytes); the port's own class,
 * below, holds its four in 48.
 */
abstract class SharedServicePortReads {
  protected abstract readonly wide: ServiceWide;
  /** The Service port's name ("" for an unnamed single port). */
  protected abstract readonly portName: string;
  /** port, protocol and nodePort in one number (see PROTOCOLS): one field for the three. */
  protected abstract readonly packed: number;

  get port(): number {
    return Math.floor(this.packed / PROTOCOLS.length) % PORT_SPAN;
  }
  get protocol(): Protocol {
    return PROTOCOLS[this.packed % PROTOCOLS.length]!;
  }
  get nodePort(): number {
    return Math.floor(this.packed / (PROTOCOLS.length * PORT_SPAN));
  }
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

/**
 * One port of a Service. The Service-wide fields are getters on the prototype chain: a spread
 * or JSON.stringify of it sees only its own fields (use plainServicePort for a full copy).
 */
export class SharedServicePort extends SharedServicePortReads implements ServicePortInfo {
  protected readonly packed: number;

  constructor(
    protected readonly wide: ServiceWide,
    protected readonly portName: string,
    readonly id: string,
    port: number,
    protocol: Protocol,
    nodePort: number,
  ) {
    super();
    this.packed = (nodePort * PORT_SPAN + port) * PROTOCOLS.length + PROTOCOLS.indexOf(protocol);
  }
}

// What one service port asks of the kernel in ipvs mode (upstream syncProxyRules' loop body):
// its virtual servers with real servers, its ipset entries, the addresses kube-ipvs0 must carry
// and the LoadBalancer IPs the node itself must not reach. Pure: the proxier caches a plan until
// the port, its endpoints or the node-level context change.

import { validateEntry } from "../../host/ipset/entries.ts";
import type { FamilyServicePort } from "../../proxy/family-view.ts";
import {
  type CategorizedEndpoints,
  categorizeEndpoints,
  type TopologyContext,
} from "../../proxy/topology.ts";
import type { EndpointInfo } from "../../proxy/types.ts";
import { cidrContains } from "../../util/net/address.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { type LowerProtocol, lowerProtocol } from "../../util/net/protocol.ts";
import { ITEMS_PER_STEP, runSteps, type Steps } from "../../util/time-slice.ts";
import { ipPortEntry, ipPortIPEntry, ipPortNetEntry, portEntry } from "./entries.ts";
import type { SetCatalog, SetId } from "./ipsets.ts";
import {
  DesiredVirtualServer,
  desiredReals,
  type RealServers,
  type VirtualServerSettings,
  type VirtualServerTemplate,
  virtualServerTemplate,
} from "./virtual-servers.ts";

/** Node-level facts every plan depends on; a change invalidates all cached plans. */
export interface PlanContext extends TopologyContext {
  readonly family: IPFamily;
  readonly sets: SetCatalog;
  readonly scheduler: VirtualServerSettings;
  /** The node's primary IP of this family (LoadBalancer source ranges covering the node). */
  readonly nodeIP: string | undefined;
  /** Addresses NodePort virtual servers listen on. */
  readonly nodePortIPs: readonly string[];
  /** Local addresses not on kube-ipvs0: an external or LoadBalancer IP found here is not bound. */
  readonly nodeAddresses: ReadonlySet<string>;
}

export interface SetEntry {
  readonly set: SetId;
  readonly entry: string;
}

/** Set members by set, each set's in the order planned (one array slot per member). */
export type PlannedEntries = Readonly<Partial<Record<SetId, readonly string[]>>>;

/** Marks a bound address in PortPlan.members (never a SetId). */
export const BIND = "bind:";

/**
 * One port's plan. Its set members and bound addresses are kept as one flat list of pairs, a
 * SetId (or BIND) then the text, in the order planned: one array per port rather than an object,
 * an array per set and an array of addresses.
 */
export class PortPlan {
  constructor(
    /** "ns/name", for the no-local-endpoints metrics (counted per Service, not per port). */
    readonly serviceKey: string,
    /** The port's virtual servers: most ports have one, held without an array. */
    private readonly servers: DesiredVirtualServer | readonly DesiredVirtualServer[],
    /** [SetId | BIND, text, ...]. */
    readonly members: readonly string[],
    /** KUBE-IPVS-OUT-FILTER rules: LoadBalancer IPs whose source ranges leave the node out. */
    readonly noNodeAccessRules: readonly string[],
    readonly noLocalInternal: boolean,
    readonly noLocalExternal: boolean,
    /** Entries ipset would refuse (left out, so one bad Service cannot stop the restore). */
    readonly rejected: readonly SetEntry[],
  ) {}

  /** Virtual servers and set members (with addresses to bind): how much the plan holds. */
  get size(): number {
    return (this.servers instanceof DesiredVirtualServer ? 1 : this.servers.length) + this.members.length / 2;
  }

  /** The port's virtual servers (an array made on request when there is one). */
  get virtualServers(): readonly DesiredVirtualServer[] {
    return this.servers instanceof DesiredVirtualServer ? [this.servers] : this.servers;
  }

  /** Calls `fn` with each virtual server, in the order planned. */
  forEachVirtualServer(fn: (vs: DesiredVirtualServer) => void): void {
    if (this.servers instanceof DesiredVirtualServer) fn(this.servers);
    else for (const vs of this.servers) fn(vs);
  }

  /** Set members by set (made on request: tests and tools, not the sync). */
  get entries(): PlannedEntries {
    const out: Partial<Record<SetId, string[]>> = {};
    forEachMember(this, (set, entry) => {
      const members = out[set];
      if (members) members.push(entry);
      else out[set] = [entry];
    });
    return out;
  }

  /** Addresses to bind on kube-ipvs0 (made on request). */
  get bindAddresses(): readonly string[] {
    const out: string[] = [];
    forEachMember(this, undefined, (address) => out.push(address));
    return out;
  }
}

/** Calls `onEntry` with every set member a plan wants and `onBind` with every address to bind. */
export function forEachMember(
  plan: PortPlan,
  onEntry?: (set: SetId, entry: string) => void,
  onBind?: (address: string) => void,
): void {
  const { members } = plan;
  for (let i = 0; i < members.length; i += 2) {
    const tag = members[i]!;
    const text = members[i + 1]!;
    if (tag === BIND) onBind?.(text);
    else onEntry?.(tag as SetId, text);
  }
}

interface Draft {
  readonly svc: FamilyServicePort;
  readonly ctx: PlanContext;
  readonly protocol: LowerProtocol;
  readonly timeout: number;
  readonly categorized: CategorizedEndpoints;
  readonly virtualServers: DesiredVirtualServer[];
  /** PortPlan.members. */
  readonly members: string[];
  readonly rejected: SetEntry[];
  readonly noNodeAccessRules: string[];
  noLocalInternal: boolean;
  noLocalExternal: boolean;
  clusterReals?: RealServers;
  localReals?: RealServers;
  /** Shared settings of this port's virtual servers, by port number and real server list. */
  readonly templates: VirtualServerTemplate[];
}

/** Empty lists of a plan: one shared array rather than two new ones for every port. */
const NONE: readonly never[] = Object.freeze([]);

export function planServicePort(
  svc: FamilyServicePort,
  endpoints: readonly EndpointInfo[],
  ctx: PlanContext,
  serviceKey = `${svc.name.namespace}/${svc.name.name}`,
): PortPlan {
  return runSteps(planningServicePort(svc, endpoints, ctx, serviceKey));
}

/**
 * planServicePort in steps: one port may list 100,000 externalIPs, LoadBalancer IPs or source
 * ranges, and its plan as many set members.
 */
export function* planningServicePort(
  svc: FamilyServicePort,
  endpoints: readonly EndpointInfo[],
  ctx: PlanContext,
  serviceKey = `${svc.name.namespace}/${svc.name.name}`,
): Steps<PortPlan> {
  const draft: Draft = {
    svc,
    ctx,
    protocol: lowerProtocol(svc.protocol),
    timeout: svc.sessionAffinity.type === "ClientIP" ? svc.sessionAffinity.timeoutSeconds : 0,
    categorized: categorizeEndpoints(endpoints, svc, ctx),
    virtualServers: [],
    members: [],
    rejected: [],
    noNodeAccessRules: [],
    noLocalInternal: false,
    noLocalExternal: false,
    templates: [],
  };
  yield* addLoopbackEntries(draft, endpoints);
  addClusterIP(draft);
  yield* addExternalIPs(draft);
  yield* addLoadBalancers(draft);
  // Upstream skips the rest of the port (health check port included) when no node IP exists.
  if (addNodePorts(draft)) addHealthCheckPort(draft);
  return new PortPlan(
    serviceKey,
    draft.virtualServers.length === 1 ? draft.virtualServers[0]! : draft.virtualServers,
    draft.members,
    draft.noNodeAccessRules.length > 0 ? draft.noNodeAccessRules : NONE,
    draft.noLocalInternal,
    draft.noLocalExternal,
    draft.rejected.length > 0 ? draft.rejected : NONE,
  );
}

/** Adds an entry if ipset would take it for its set's type and family. */
function addEntry(d: Draft, set: SetId, entry: string): void {
  const { spec } = d.ctx.sets[set];
  if (!validateEntry(spec.type, entry, spec.family)) {
    d.rejected.push({ set, entry });
    return;
  }
  d.members.push(set, entry);
}

/**
 * Real servers for one kind of traffic. With a Local policy and no local endpoint, upstream
 * still uses the cluster-wide list (kubernetes#97081: pods on this node can reach the Service),
 * and counts the Service as having no local endpoints.
 */
function realsFor(d: Draft, onlyLocal: boolean): RealServers {
  const { clusterEndpoints, localEndpoints, hasAnyEndpoints } = d.categorized;
  if (onlyLocal && (localEndpoints?.length ?? 0) > 0) {
    d.localReals ??= desiredReals(localEndpoints!);
    return d.localReals;
  }
  if (onlyLocal && hasAnyEndpoints) {
    if (d.svc.internalPolicyLocal) d.noLocalInternal = true;
    if (d.svc.externalPolicyLocal) d.noLocalExternal = true;
  }
  d.clusterReals ??= desiredReals(clusterEndpoints ?? []);
  return d.clusterReals;
}

/**
 * `key`, when given, is ipPortEntry(address, protocol, port): the virtual server's key and its
 * set member are then one string (virtualServerKeyString spells keys the way ipset spells
 * hash:ip,port members).
 */
function addVirtualServer(
  d: Draft,
  address: string,
  port: number,
  onlyLocal: boolean,
  bind: boolean,
  key?: string,
): void {
  const { svc, ctx } = d;
  const reals = realsFor(d, onlyLocal);
  let template = d.templates.find((t) => t.port === port && t.reals === reals);
  if (!template) {
    template = virtualServerTemplate(svc.id, port, svc.protocol, d.timeout, ctx.scheduler, reals);
    d.templates.push(template);
  }
  d.virtualServers.push(new DesiredVirtualServer(address, template, key));
  if (bind) d.members.push(BIND, address);
}

/** Hairpin: a local endpoint reaching itself through the Service is masqueraded. */
function* addLoopbackEntries(d: Draft, endpoints: readonly EndpointInfo[]): Steps<void> {
  for (let i = 0; i < endpoints.length; i++) {
    if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
    const ep = endpoints[i]!;
    if (!ep.isLocal || ep.port === 0) continue;
    addEntry(d, "loopBack", ipPortIPEntry(ep.ip, d.protocol, ep.port, ep.ip));
  }
}

function addClusterIP(d: Draft): void {
  const { svc } = d;
  const entry = ipPortEntry(svc.clusterIP, d.protocol, svc.port);
  addEntry(d, "clusterIP", entry);
  // externalTrafficPolicy never applies to the cluster IP; internalTrafficPolicy does.
  addVirtualServer(d, svc.clusterIP, svc.port, svc.internalPolicyLocal, true, entry);
}

function* addExternalIPs(d: Draft): Steps<void> {
  const { svc, ctx } = d;
  for (let i = 0; i < svc.externalIPs.length; i++) {
    if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
    const ip = svc.externalIPs[i]!;
    const set: SetId = svc.externalPolicyLocal ? "externalIPLocal" : "externalIP";
    const entry = ipPortEntry(ip, d.protocol, svc.port);
    addEntry(d, set, entry);
    // An address another interface already carries must not also go on kube-ipvs0.
    addVirtualServer(d, ip, svc.port, svc.externalPolicyLocal, !ctx.nodeAddresses.has(ip), entry);
  }
}

function* addLoadBalancers(d: Draft): Steps<void> {
  const { svc, ctx } = d;
  for (let i = 0; i < svc.loadBalancerVIPs.length; i++) {
    if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
    const ip = svc.loadBalancerVIPs[i]!;
    const entry = ipPortEntry(ip, d.protocol, svc.port);
    addEntry(d, "loadBalancer", entry);
    if (svc.externalPolicyLocal) addEntry(d, "loadBalancerLocal", entry);
    if (svc.loadBalancerSourceRanges.length > 0) yield* addSourceRanges(d, ip, entry);
    addVirtualServer(d, ip, svc.port, svc.externalPolicyLocal, !ctx.nodeAddresses.has(ip), entry);
  }
}

/**
 * loadBalancerSourceRanges: the LoadBalancer IP goes through KUBE-SOURCE-RANGES-FIREWALL, which
 * admits the listed CIDRs. When a range covers the node itself, the VIP as source is admitted
 * too (a VIP bound on the node loops the node's own requests back with the VIP as source);
 * otherwise the node is kept out explicitly (kubernetes#119656).
 */
function* addSourceRanges(d: Draft, ip: string, entry: string): Steps<void> {
  const { svc, ctx } = d;
  addEntry(d, "loadBalancerFW", entry);
  let allowFromNode = false;
  const ranges = svc.loadBalancerSourceRanges;
  for (let i = 0; i < ranges.length; i++) {
    if (i % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
    const cidr = ranges[i]!;
    addEntry(d, "loadBalancerSourceCIDR", ipPortNetEntry(ip, d.protocol, svc.port, cidr));
    if (ctx.nodeIP !== undefined && cidrContains(cidr, ctx.nodeIP)) allowFromNode = true;
  }
  if (allowFromNode) {
    addEntry(d, "loadBalancerSourceIP", ipPortIPEntry(ip, d.protocol, svc.port, ip));
  } else {
    d.noNodeAccessRules.push(
      `-A KUBE-IPVS-OUT-FILTER -s ${ip} -m ipvs --vaddr ${ip} --vproto ${d.protocol} --vport ${svc.port} -j DROP`,
    );
  }
}

const NODE_PORT_SETS: Readonly<Record<LowerProtocol, readonly [SetId, SetId]>> = {
  tcp: ["nodePortTCP", "nodePortLocalTCP"],
  udp: ["nodePortUDP", "nodePortLocalUDP"],
  sctp: ["nodePortSCTP", "nodePortLocalSCTP"],
};

/** False when the port has a NodePort but the node has no address to serve it on. */
function addNodePorts(d: Draft): boolean {
  const { svc, ctx } = d;
  if (svc.nodePort === 0) return true;
  if (ctx.nodePortIPs.length === 0) return false;
  const [set, localSet] = NODE_PORT_SETS[d.protocol];
  // bitmap:port sets hold the port alone; SCTP's hash:ip,port set needs one entry per node IP.
  const entries =
    d.protocol === "sctp"
      ? ctx.nodePortIPs.map((ip) => ipPortEntry(ip, "sctp", svc.nodePort))
      : [portEntry(svc.nodePort)];
  for (const entry of entries) addEntry(d, set, entry);
  if (svc.externalPolicyLocal) for (const entry of entries) addEntry(d, localSet, entry);
  for (const ip of ctx.nodePortIPs) addVirtualServer(d, ip, svc.nodePort, svc.externalPolicyLocal, false);
  return true;
}

function addHealthCheckPort(d: Draft): void {
  if (d.svc.healthCheckNodePort === 0) return;
  addEntry(d, "healthCheckNodePort", portEntry(d.svc.healthCheckNodePort));
}

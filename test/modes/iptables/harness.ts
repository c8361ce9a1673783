// Drives the iptables proxier the way the sync controller does: Service and EndpointSlice
// objects go through the real change trackers and maps, and each sync gets their update
// results. Addresses follow the documentation ranges: 198.51.100.0/24 cluster IPs,
// 192.0.2.0/24 pods (192.0.2.0/25 is this node's pod CIDR), 203.0.113.0/24 node, external and
// load balancer IPs, 2001:db8::/32 for IPv6.

import { defaultProxyConfig } from "../../../src/config/defaults.ts";
import type { ProxyConfig } from "../../../src/config/types.ts";
import { createNfacctClient } from "../../../src/host/nfacct/client.ts";
import { FakeNfacct } from "../../../src/host/nfacct/testing/fake.ts";
import type { NfacctClient } from "../../../src/host/nfacct/types.ts";
import type { NodeInfo } from "../../../src/k8s/node-info.ts";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { type Logger, nullLogger } from "../../../src/log/logger.ts";
import { IptablesProxier, type IptablesProxierDeps } from "../../../src/modes/iptables/proxier.ts";
import { EndpointsMap } from "../../../src/proxy/endpoints-map.ts";
import { EndpointsChangeTracker } from "../../../src/proxy/endpoints-tracker.ts";
import { createMetrics, type Metrics } from "../../../src/proxy/metrics/metrics.ts";
import type { SyncInput } from "../../../src/proxy/proxier.ts";
import { ServiceMap } from "../../../src/proxy/service-map.ts";
import { ServiceChangeTracker } from "../../../src/proxy/service-tracker.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";
import { FakeClock } from "../../../src/util/testing/fake-clock.ts";
import { RecordingIptables } from "./recording-iptables.ts";

/** The real nfacct client over a stateful fake (counters that exist once ensured). */
export function fakeNfacct(): { fake: FakeNfacct; client: NfacctClient } {
  const fake = new FakeNfacct();
  return { fake, client: createNfacctClient({ exec: fake.install() }) };
}

export const NODE = "node-a";
export const NODE_IP = "203.0.113.10";
export const NODE_IPV6 = "2001:db8:ffff::10";

type Spec = NonNullable<ServiceObject["spec"]>;
type Endpoint = NonNullable<EndpointSliceObject["endpoints"]>[number];
type Port = NonNullable<EndpointSliceObject["ports"]>[number];

/** A Service in namespace `ns`. Defaults: ClusterIP with one TCP port "p80". */
export function service(
  ns: string,
  name: string,
  spec: Spec,
  status?: ServiceObject["status"],
): ServiceObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: ns, name },
    spec: { type: "ClusterIP", ports: [{ name: "p80", port: 80, protocol: "TCP" }], ...spec },
    ...(status ? { status } : {}),
  };
}

/** An EndpointSlice for Service ns/name. Defaults: IPv4, port "p80" -> 8080/TCP. */
export function endpointSlice(
  ns: string,
  name: string,
  endpoints: Endpoint[],
  opts: { ports?: Port[]; addressType?: string; suffix?: string } = {},
): EndpointSliceObject {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      namespace: ns,
      name: `${name}-${opts.suffix ?? "a"}`,
      labels: { "kubernetes.io/service-name": name },
    },
    addressType: opts.addressType ?? "IPv4",
    ports: opts.ports ?? [{ name: "p80", port: 8080, protocol: "TCP" }],
    endpoints,
  };
}

export interface EpOpts {
  node?: string;
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
  zone?: string;
  hints?: string[];
}

export function ep(ip: string, o: EpOpts = {}): Endpoint {
  const ready = o.ready ?? true;
  return {
    addresses: [ip],
    nodeName: o.node ?? "node-b",
    ...(o.zone ? { zone: o.zone } : {}),
    conditions: { ready, serving: o.serving ?? ready, terminating: o.terminating ?? false },
    ...(o.hints ? { hints: { forZones: o.hints.map((z) => ({ name: z })) } } : {}),
  };
}

/** The cluster as the trackers see it; `input()` folds pending changes like a sync does. */
export class Cluster {
  readonly services = new ServiceMap();
  readonly endpoints = new EndpointsMap();
  private readonly serviceTracker = new ServiceChangeTracker({ logger: nullLogger });
  private readonly endpointsTracker = new EndpointsChangeTracker({ nodeName: NODE, logger: nullLogger });
  private readonly known = new Map<string, ServiceObject>();
  node: NodeInfo | undefined = {
    name: NODE,
    labels: {},
    podCIDRs: ["192.0.2.0/25", "2001:db8:1::/64"],
    ips: { ordered: [NODE_IP, NODE_IPV6], ipv4: NODE_IP, ipv6: NODE_IPV6 },
  };

  apply(...objects: (ServiceObject | EndpointSliceObject)[]): this {
    for (const o of objects) {
      if (o.kind === "Service") {
        const s = o as ServiceObject;
        const key = `${s.metadata?.namespace}/${s.metadata?.name}`;
        this.serviceTracker.serviceChanged(this.known.get(key), s);
        this.known.set(key, s);
      } else {
        this.endpointsTracker.endpointSliceChanged(o as EndpointSliceObject, false);
      }
    }
    return this;
  }

  remove(...objects: (ServiceObject | EndpointSliceObject)[]): this {
    for (const o of objects) {
      if (o.kind === "Service") {
        const key = `${o.metadata?.namespace}/${o.metadata?.name}`;
        this.serviceTracker.serviceChanged(this.known.get(key), undefined);
        this.known.delete(key);
      } else {
        this.endpointsTracker.endpointSliceChanged(o as EndpointSliceObject, true);
      }
    }
    return this;
  }

  input(): SyncInput {
    return {
      services: this.services,
      endpoints: this.endpoints,
      serviceUpdate: this.services.update(this.serviceTracker),
      endpointsUpdate: this.endpoints.update(this.endpointsTracker),
      node: this.node,
      nodeName: NODE,
    };
  }
}

export interface Setup {
  readonly ipt: RecordingIptables;
  readonly proxier: IptablesProxier;
  readonly cluster: Cluster;
  readonly metrics: Metrics;
  readonly clock: FakeClock;
  readonly config: ProxyConfig;
  /** Runs one sync and returns the restore input it wrote. */
  sync(): Promise<string>;
}

export interface SetupOptions {
  family?: IPFamily;
  config?: (c: ProxyConfig) => void;
  deps?: Partial<IptablesProxierDeps>;
  localAddresses?: string[];
  logger?: Logger;
}

/** Upstream's test conventions translated: ClusterCIDR 192.0.2.0/24 (IPv6 2001:db8:1::/48). */
export function setup(opts: SetupOptions = {}): Setup {
  const family = opts.family ?? "IPv4";
  const config = defaultProxyConfig();
  config.clusterCIDRs = ["192.0.2.0/24", "2001:db8:1::/48"];
  opts.config?.(config);
  const ipt = new RecordingIptables(family);
  const metrics = createMetrics();
  const clock = new FakeClock(1_000_000);
  const cluster = new Cluster();
  const addresses = opts.localAddresses ?? ["127.0.0.1/8", `${NODE_IP}/24`, "::1/128", `${NODE_IPV6}/64`];
  const proxier = new IptablesProxier({
    iptables: ipt,
    family,
    config,
    metrics,
    logger: opts.logger ?? nullLogger,
    nodeName: NODE,
    nodeIPs: { IPv4: NODE_IP, IPv6: NODE_IPV6 },
    localAddresses: async () => addresses,
    clock,
    wallClock: () => clock.now(),
    ...opts.deps,
  });
  const sync = async () => {
    await proxier.sync(cluster.input());
    return ipt.restores.at(-1) ?? "";
  };
  return { ipt, proxier, cluster, metrics, clock, config, sync };
}

/** The lines of a restore payload (or a save) that belong to one chain of one table, in order. */
export function chainRules(payload: string, table: string, chain: string): string[] {
  const out: string[] = [];
  let current = "";
  for (const line of payload.split("\n")) {
    if (line.startsWith("*")) current = line.slice(1);
    else if (current === table && line.startsWith(`-A ${chain} `)) out.push(line);
  }
  return out;
}

/** Every line of one table's section of a restore payload. */
export function tableSection(payload: string, table: string): string[] {
  const lines = payload.split("\n");
  const start = lines.indexOf(`*${table}`);
  if (start < 0) return [];
  const end = lines.indexOf("COMMIT", start);
  return lines.slice(start, end + 1);
}

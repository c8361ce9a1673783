// One full sync of a proxy mode, in-process and without the binary, the way --dry-run runs it:
// the mode is built through the registry (src/modes/registry.ts) on a fresh, empty fake host,
// every mutating command goes to the dry-run recorder (src/exec/dry-run.ts) with its stdin, and
// the cluster objects reach the proxier through the SyncController's handler calls (the same
// calls the informers make), so Nodes and ServiceCIDRs pass through their own readers too.
// Property tests feed generated objects through here and judge what was recorded.

import { resolveNodeIPs } from "../../src/app/node-ips.ts";
import { defaultProxyConfig } from "../../src/config/defaults.ts";
import { effectiveFeatureGates } from "../../src/config/feature-gates.ts";
import type { ProxyConfig } from "../../src/config/types.ts";
import { DryRunRecorder, type RecordedCommand } from "../../src/exec/dry-run.ts";
import { FakeExec } from "../../src/exec/testing/fake.ts";
import { FakeConntrack } from "../../src/host/conntrack/testing/fake.ts";
import { FakeIpset } from "../../src/host/ipset/testing/fake.ts";
import { FakeIptables } from "../../src/host/iptables/testing/fake.ts";
import { FakeIpvs } from "../../src/host/ipvs/testing/fake.ts";
import { FakeNetlink } from "../../src/host/netlink/testing/fake.ts";
import { FakeNfacct } from "../../src/host/nfacct/testing/fake.ts";
import { FakeNft } from "../../src/host/nft/testing/fake.ts";
import { createFakeSysctl } from "../../src/host/sysctl/testing/fake.ts";
import { nodeIPs, nodeName as nodeNameOf } from "../../src/k8s/node-info.ts";
import type {
  EndpointSliceObject,
  NodeObject,
  ServiceCIDRObject,
  ServiceObject,
} from "../../src/k8s/objects.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { type ModeName, modeNamed } from "../../src/modes/registry.ts";
import { createMetrics } from "../../src/proxy/metrics/metrics.ts";
import type { Proxier } from "../../src/proxy/proxier.ts";
import { SyncController } from "../../src/proxy/sync-controller.ts";

/** The node the run is for; the generated Node object claims this name most of the time. */
export const SYNC_NODE = "node-a";
export const SYNC_NODE_IP = "203.0.113.10";
export const SYNC_NODE_IPV6 = "2001:db8:ffff::10";

/** What a cluster source could deliver: every field may be wrong, as the API server could send it. */
export interface ClusterObjects {
  readonly serviceCIDRs: readonly ServiceCIDRObject[];
  readonly services: readonly ServiceObject[];
  readonly slices: readonly EndpointSliceObject[];
  readonly node: NodeObject | undefined;
}

export interface SyncRecord {
  readonly mode: ModeName;
  /** Every mutating command the build and the sync asked for, in order, stdin included. */
  readonly commands: readonly RecordedCommand[];
  /** The log of the run (for failure messages). */
  readonly log: readonly string[];
}

// The driver's own bookkeeping must not trip over a hostile field (e.g. {"toString": "x"}).
function keyOf(o: { metadata?: { namespace?: unknown; name?: unknown } } | undefined): string {
  const m = o?.metadata;
  return JSON.stringify([m?.namespace ?? null, m?.name ?? null]);
}

/** A node with both families, nothing of kube-proxy's on it yet; every tool answers from a fake. */
function freshHost(): FakeExec {
  const exec = new FakeExec();
  new FakeIptables().install(exec, "IPv4");
  new FakeIptables().install(exec, "IPv6");
  new FakeIpset().install(exec);
  new FakeIpvs().install(exec);
  new FakeNft().install(exec);
  new FakeNfacct().install(exec);
  new FakeConntrack().install(exec);
  const net = new FakeNetlink();
  net.install(exec);
  net.addDevice("eth0", "ether", { addresses: [`${SYNC_NODE_IP}/24`, `${SYNC_NODE_IPV6}/64`] });
  return exec;
}

/** The configuration every run uses: defaults, the mode, and a cluster CIDR per family. */
export function syncConfig(mode: ModeName): ProxyConfig {
  const config = defaultProxyConfig();
  config.mode = mode;
  config.clusterCIDRs = ["192.0.2.0/24", "2001:db8:1::/48"];
  return config;
}

/** A run being driven: the controller the objects go to, and the commands recorded so far. */
interface Driven {
  readonly controller: SyncController;
  readonly record: SyncRecord;
}

/**
 * Delivers `objects` in the order a snapshot source does (ServiceCIDRs, Services, the synced
 * mark, EndpointSlices, the synced mark, the Node), builds `mode` on a fresh recorded host with
 * the node IPs the Node gives (as --dry-run does), and runs one sync. Anything thrown on the way
 * propagates: the property tests treat it as a failure.
 */
async function drive(mode: ModeName, objects: ClusterObjects): Promise<Driven> {
  const log = memoryLogger();
  const recorder = new DryRunRecorder(freshHost());
  const config = syncConfig(mode);
  const featureGates = effectiveFeatureGates(config.featureGates);
  const proxiers: Proxier[] = [];
  const controller = new SyncController({
    nodeName: SYNC_NODE,
    proxier: { sync: async (input) => void (await Promise.all(proxiers.map((p) => p.sync(input)))) },
    minSyncPeriodMs: 0,
    syncPeriodMs: 3_600_000,
    logger: log,
    featureGates,
  });

  for (const cidr of objects.serviceCIDRs) controller.onServiceCIDRChange(cidr, false);
  // A second object under the same key is an update of the first, as an informer delivers it.
  const known = new Map<string, ServiceObject>();
  for (const svc of objects.services) {
    controller.onServiceChange(known.get(keyOf(svc)), svc);
    known.set(keyOf(svc), svc);
  }
  controller.onServicesSynced();
  for (const slice of objects.slices) controller.onEndpointSliceChange(slice, false);
  controller.onEndpointSlicesSynced();
  if (objects.node) controller.onNodeChange(objects.node);

  const raw = nodeIPs(objects.node ?? {}).ordered;
  const planned = await modeNamed(mode).plan({
    exec: recorder,
    config,
    featureGates,
    metrics: createMetrics(),
    log,
    // As --dry-run does: the mode takes the name the Node object gives (hostile or absent too).
    nodeName: nodeNameOf(objects.node),
    nodeIPs: resolveNodeIPs(raw, config.bindAddress).ips,
    sysctl: createFakeSysctl({
      "net/ipv6/conf/all/disable_ipv6": 0,
      "net/ipv4/conf/all/route_localnet": 0,
      "net/netfilter/nf_conntrack_tcp_be_liberal": 0,
    }),
    backend: "nft",
  });
  proxiers.push(planned.proxier);
  await controller.syncNow();
  return { controller, record: { mode, commands: recorder.commands, log: log.lines } };
}

/** One full sync of `objects` in `mode` (see drive). */
export async function syncOnce(mode: ModeName, objects: ClusterObjects): Promise<SyncRecord> {
  return (await drive(mode, objects)).record;
}

/**
 * The first sync, then churn with a sync after each step: every object delivered again as an
 * update of itself (in reverse order), then every object deleted (a Service with its last
 * state, a slice and a ServiceCIDR marked removed, the Node gone). The update and delete paths
 * of the trackers see the hostile objects as "previous" state too.
 */
export async function syncWithChurn(mode: ModeName, objects: ClusterObjects): Promise<SyncRecord> {
  const { controller, record } = await drive(mode, objects);
  // What an informer holds: the last object under each key.
  const services = [...new Map(objects.services.map((s) => [keyOf(s), s])).values()].reverse();
  for (const svc of services) controller.onServiceChange(svc, svc);
  for (const slice of [...objects.slices].reverse()) controller.onEndpointSliceChange(slice, false);
  for (const cidr of [...objects.serviceCIDRs].reverse()) controller.onServiceCIDRChange(cidr, false);
  if (objects.node) controller.onNodeChange(objects.node);
  await controller.syncNow();
  for (const svc of services) controller.onServiceChange(svc, undefined);
  for (const slice of objects.slices) controller.onEndpointSliceChange(slice, true);
  for (const cidr of objects.serviceCIDRs) controller.onServiceCIDRChange(cidr, true);
  controller.onNodeChange(undefined);
  await controller.syncNow();
  return record;
}

/** The program a recorded command ran, without its directory. */
export function programOf(c: RecordedCommand): string {
  const cmd = c.argv[0] ?? "";
  return cmd.slice(cmd.lastIndexOf("/") + 1);
}

export const IPTABLES_RESTORE = /^ip(6?)tables(?:-legacy|-nft)?-restore$/;
export const IPTABLES_CLI = /^ip(6?)tables(?:-legacy|-nft)?$/;

/**
 * Collects unhandled promise rejections while a property runs: a sync that "succeeds" but leaves
 * a rejected promise behind would crash a Node-based run (and hide a failure in Bun's).
 */
export function watchUnhandledRejections(): { take(): unknown[]; stop(): void } {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => void seen.push(reason);
  process.on("unhandledRejection", listener);
  return {
    take: () => seen.splice(0),
    stop: () => void process.off("unhandledRejection", listener),
  };
}

/** Lets pending rejections surface: a macrotask runs after every queued microtask. */
export const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

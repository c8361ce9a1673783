// Which cluster view a --dry-run computes its plan from: the --state file when given, else the
// API server when one is configured, else the example cluster embedded in the binary (so the
// node smoke check runs anywhere). Each view delivers into the same handler as a real run.

import { readFile } from "node:fs/promises";
import { EXAMPLE_CLUSTER_YAML } from "../generated/example-cluster.ts";
import { type HostState, parseHostState } from "../host/host-state/schema.ts";
import { createApiSource } from "../k8s/informers.ts";
import type { LoadKubeConfigResult } from "../k8s/kubeconfig.ts";
import { resolveNodeName } from "../k8s/node-name.ts";
import { createSnapshotSource, snapshotNodeName } from "../k8s/snapshot-source.ts";
import type { ClusterEventHandler, ClusterSource } from "../k8s/source.ts";
import { parseStateDocuments, type StateDocuments } from "../k8s/state-file.ts";
import type { Logger } from "../log/logger.ts";
import type { Check } from "../proxy/check.ts";

export interface ClusterSnapshot {
  readonly source: string;
  readonly hostState?: HostState;
  /** The node a snapshot describes, when it names exactly one. */
  readonly nodeName?: string;
  /** Delivers the whole view, waiting for the initial lists; reports how that went. */
  deliver(handler: ClusterEventHandler): Promise<Check>;
}

export interface ClusterViewOptions {
  /** The --state snapshot, when one is given (a replay reads its snapshots itself). */
  readonly stateFile: string | undefined;
  readonly kube: LoadKubeConfigResult | undefined;
  readonly hostnameOverride: string;
  readonly log: Logger;
  readonly apiSyncTimeoutMs: number;
  readonly qps?: number;
  readonly burst?: number;
}

export function describeDocuments(source: string, d: StateDocuments, hasHostState: boolean): string {
  const count = (n: number, kind: string) => `${n} ${kind}${n === 1 ? "" : "s"}`;
  const parts = [
    count(d.services.length, "Service"),
    count(d.endpointSlices.length, "EndpointSlice"),
    count(d.nodes.length, "Node"),
  ];
  if (d.serviceCIDRs.length) parts.push(count(d.serviceCIDRs.length, "ServiceCIDR"));
  if (hasHostState) parts.push("a HostState");
  if (d.ignored.length) parts.push(`${d.ignored.length} ignored objects`);
  return `${source}: ${parts.join(", ")}`;
}

function snapshotView(text: string, source: string, hostnameOverride: string, why = ""): ClusterSnapshot {
  return documentsView(parseStateDocuments(text, source), source, hostnameOverride, why);
}

/** A snapshot already parsed (a replay parses every snapshot before the first step). */
export function documentsView(
  docs: StateDocuments,
  source: string,
  hostnameOverride: string,
  why = "",
): ClusterSnapshot {
  const hostState = docs.hostState ? parseHostState(docs.hostState) : undefined;
  const nodeName = hostnameOverride || snapshotNodeName(docs);
  return {
    source,
    ...(hostState ? { hostState } : {}),
    ...(nodeName ? { nodeName } : {}),
    async deliver(handler) {
      await createSnapshotSource(docs, nodeName ?? "").start(handler);
      return {
        name: "cluster state",
        ok: true,
        detail: `${why}${describeDocuments(source, docs, Boolean(hostState))}`,
      };
    },
  };
}

/** Wraps a handler to learn when both initial lists are in. */
function syncWatcher(inner: ClusterEventHandler) {
  const state = { services: false, slices: false, counts: { services: 0, slices: 0 } };
  let wake = () => {};
  const handler: ClusterEventHandler = {
    ...inner,
    onServiceChange: (p, c) => {
      state.counts.services += c ? 1 : 0;
      inner.onServiceChange(p, c);
    },
    onEndpointSliceChange: (s, removed) => {
      state.counts.slices += removed ? 0 : 1;
      inner.onEndpointSliceChange(s, removed);
    },
    onNodeChange: (n) => inner.onNodeChange(n),
    onServiceCIDRChange: (c, removed) => inner.onServiceCIDRChange(c, removed),
    onServicesSynced: () => {
      state.services = true;
      inner.onServicesSynced();
      wake();
    },
    onEndpointSlicesSynced: () => {
      state.slices = true;
      inner.onEndpointSlicesSynced();
      wake();
    },
  };
  const synced = (timeoutMs: number) =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      wake = () => {
        if (state.services && state.slices) {
          clearTimeout(timer);
          resolve(true);
        }
      };
      wake();
    });
  return { handler, synced, state };
}

function apiView(source: ClusterSource, server: string, opts: ClusterViewOptions): ClusterSnapshot {
  return {
    source: `API server ${server}`,
    async deliver(handler) {
      const w = syncWatcher(handler);
      await source.start(w.handler);
      const ok = await w.synced(opts.apiSyncTimeoutMs);
      await source.stop();
      const detail = ok
        ? `API server ${server}: ${w.state.counts.services} Services, ${w.state.counts.slices} EndpointSlices listed`
        : `API server ${server}: initial lists not complete within ${opts.apiSyncTimeoutMs / 1000}s ` +
          `(services listed: ${w.state.services}, endpoint slices listed: ${w.state.slices}); nothing would be synced`;
      return { name: "cluster state", ok, detail };
    },
  };
}

export async function loadClusterView(opts: ClusterViewOptions): Promise<ClusterSnapshot> {
  if (opts.stateFile) {
    return snapshotView(await readFile(opts.stateFile, "utf8"), opts.stateFile, opts.hostnameOverride);
  }
  if (opts.kube?.ok) {
    const nodeName = resolveNodeName(opts.hostnameOverride);
    const source = createApiSource({
      kubeConfig: opts.kube.kubeConfig,
      nodeName,
      logger: opts.log,
      ...(opts.qps !== undefined ? { qps: opts.qps } : {}),
      ...(opts.burst !== undefined ? { burst: opts.burst } : {}),
    });
    return { ...apiView(source, opts.kube.server, opts), nodeName };
  }
  const why =
    opts.kube && !opts.kube.ok
      ? `no API server configured (${opts.kube.error.tried.join("; ")}); using `
      : "";
  return snapshotView(EXAMPLE_CLUSTER_YAML, "examples/cluster.yaml (embedded)", opts.hostnameOverride, why);
}

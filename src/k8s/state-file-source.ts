// A ClusterSource over a --state file for real runs: delivers the file like an initial list,
// then re-reads it when it changes and delivers only the differences, as a watch would. A file
// that fails to parse is logged and ignored: the last good view stays programmed.

import { readFileSync, statSync } from "node:fs";
import type { Logger } from "../log/logger.ts";
import { errText } from "../util/err-text.ts";
import type { EndpointSliceObject, NodeObject, ServiceCIDRObject, ServiceObject } from "./objects.ts";
import type { ClusterEventHandler, ClusterSource } from "./source.ts";
import { type KubeObject, parseStateDocuments, type StateDocuments } from "./state-file.ts";
import { objectKey, type KubeObject as StoreObject } from "./store.ts";

/** One snapshot's objects by key, and the Node this proxy runs on. */
export interface View {
  services: Map<string, KubeObject>;
  slices: Map<string, KubeObject>;
  serviceCIDRs: Map<string, KubeObject>;
  node: KubeObject | undefined;
}

const keyOf = (o: KubeObject) => objectKey(o as StoreObject);

export function viewOf(docs: StateDocuments, nodeName: string): View {
  return {
    services: new Map(docs.services.map((s) => [keyOf(s), s])),
    slices: new Map(docs.endpointSlices.map((s) => [keyOf(s), s])),
    serviceCIDRs: new Map(docs.serviceCIDRs.map((c) => [keyOf(c), c])),
    node: docs.nodes.find((n) => n.metadata?.name === nodeName),
  };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Delivers the changes between two views: adds and updates first, then deletes. */
export function deliverDiff(prev: View, next: View, h: ClusterEventHandler): number {
  let changes = 0;
  for (const [k, cidr] of next.serviceCIDRs) {
    if (!same(prev.serviceCIDRs.get(k), cidr)) {
      h.onServiceCIDRChange(cidr as ServiceCIDRObject, false);
      changes++;
    }
  }
  for (const [k, cidr] of prev.serviceCIDRs) {
    if (!next.serviceCIDRs.has(k)) {
      h.onServiceCIDRChange(cidr as ServiceCIDRObject, true);
      changes++;
    }
  }
  for (const [k, svc] of next.services) {
    const old = prev.services.get(k);
    if (!old || !same(old, svc)) {
      h.onServiceChange(old as ServiceObject | undefined, svc as ServiceObject);
      changes++;
    }
  }
  for (const [k, slice] of next.slices) {
    if (!same(prev.slices.get(k), slice)) {
      h.onEndpointSliceChange(slice as EndpointSliceObject, false);
      changes++;
    }
  }
  for (const [k, svc] of prev.services) {
    if (!next.services.has(k)) {
      h.onServiceChange(svc as ServiceObject, undefined);
      changes++;
    }
  }
  for (const [k, slice] of prev.slices) {
    if (!next.slices.has(k)) {
      h.onEndpointSliceChange(slice as EndpointSliceObject, true);
      changes++;
    }
  }
  if (!same(prev.node, next.node)) {
    h.onNodeChange(next.node as NodeObject | undefined);
    changes++;
  }
  return changes;
}

export interface StateFileSourceOptions {
  readonly path: string;
  readonly nodeName: string;
  readonly logger: Logger;
  /** How often the file's size and mtime are checked. */
  readonly pollMs?: number;
}

export function createStateFileSource(opts: StateFileSourceOptions): ClusterSource {
  const empty: View = { services: new Map(), slices: new Map(), serviceCIDRs: new Map(), node: undefined };
  let current = empty;
  let stamp = "";
  let timer: ReturnType<typeof setInterval> | undefined;

  const fileStamp = () => {
    const st = statSync(opts.path);
    return `${st.mtimeMs}:${st.size}`;
  };
  const read = (): View =>
    viewOf(parseStateDocuments(readFileSync(opts.path, "utf8"), opts.path), opts.nodeName);

  const poll = (handler: ClusterEventHandler) => {
    try {
      const s = fileStamp();
      if (s === stamp) return;
      stamp = s;
      const next = read();
      const n = deliverDiff(current, next, handler);
      current = next;
      opts.logger.info("Reloaded state file", { file: opts.path, changes: n });
    } catch (err) {
      opts.logger.error("Ignoring unreadable state file; keeping the last good view", {
        file: opts.path,
        err: errText(err),
      });
    }
  };

  return {
    async start(handler) {
      stamp = fileStamp();
      current = read();
      deliverDiff(empty, current, handler);
      handler.onServicesSynced();
      handler.onEndpointSlicesSynced();
      timer = setInterval(() => poll(handler), opts.pollMs ?? 500);
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}

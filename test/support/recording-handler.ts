// A ClusterEventHandler that writes every call down as a short line ("svc+ default/a",
// "svc~ default/a rv 5->7", "slice- default/s", "node~ n1", "svc synced"), so tests can assert
// on the exact sequence an informer delivered.

import type { EndpointSliceObject, NodeObject, ObjectMeta, ServiceObject } from "../../src/k8s/objects.ts";
import type { ClusterEventHandler } from "../../src/k8s/source.ts";

function key(m: ObjectMeta | undefined): string {
  return m?.namespace ? `${m.namespace}/${m.name}` : `${m?.name}`;
}

export interface RecordingHandler extends ClusterEventHandler {
  readonly calls: string[];
  readonly services: Map<string, ServiceObject>;
  readonly slices: Map<string, EndpointSliceObject>;
  node: NodeObject | undefined;
  /** Calls matching a prefix, e.g. "svc-" for every Service delete. */
  matching(prefix: string): string[];
}

export function recordingHandler(): RecordingHandler {
  const calls: string[] = [];
  const h: RecordingHandler = {
    calls,
    services: new Map(),
    slices: new Map(),
    node: undefined,
    matching: (prefix) => calls.filter((c) => c.startsWith(prefix)),
    onServiceChange(prev, cur) {
      if (prev && cur) {
        calls.push(
          `svc~ ${key(cur.metadata)} rv ${prev.metadata?.resourceVersion}->${cur.metadata?.resourceVersion}`,
        );
      } else if (cur) calls.push(`svc+ ${key(cur.metadata)}`);
      else calls.push(`svc- ${key(prev?.metadata)}`);
      if (cur) h.services.set(key(cur.metadata), cur);
      else h.services.delete(key(prev?.metadata));
    },
    onEndpointSliceChange(slice, removed) {
      calls.push(`slice${removed ? "-" : "~"} ${key(slice.metadata)}`);
      if (removed) h.slices.delete(key(slice.metadata));
      else h.slices.set(key(slice.metadata), slice);
    },
    onNodeChange(node) {
      calls.push(node ? `node~ ${key(node.metadata)}` : "node-");
      h.node = node;
    },
    onServiceCIDRChange(cidr, removed) {
      calls.push(`cidr${removed ? "-" : "~"} ${key(cidr.metadata)}`);
    },
    onServicesSynced() {
      calls.push("svc synced");
    },
    onEndpointSlicesSynced() {
      calls.push("slice synced");
    },
  };
  return h;
}

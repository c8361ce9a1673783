// The objects of /debug/state?format=snapshot: a --state file that reproduces this node's view.
// Services, the Node and ServiceCIDRs are the delivered objects, trimmed to what kube-proxy
// reads (k8s/shareable.ts). EndpointSlices are rebuilt from the trackers' parsed copies (the
// informer keeps no whole slice, to save memory): what they hold is exactly what the proxy uses.

import type { ObjectStore } from "../../k8s/object-store.ts";
import type { EndpointSliceObject } from "../../k8s/objects.ts";
import { shareableNode, shareableService, shareableServiceCIDR } from "../../k8s/shareable.ts";
import { type ParsedSlice, SERVICE_NAME_LABEL, type SliceEndpoint } from "../endpoint-slice.ts";
import type { ServiceKey } from "../types.ts";

/** A slice as the trackers hold it: its Service ("ns/name"), its name, its parsed content. */
export interface HeldSlice {
  readonly service: ServiceKey;
  readonly name: string;
  readonly slice: ParsedSlice;
}

function endpointObject(e: SliceEndpoint): NonNullable<EndpointSliceObject["endpoints"]>[number] {
  const hints = {
    ...(e.zoneHints.size > 0 ? { forZones: [...e.zoneHints].sort().map((name) => ({ name })) } : {}),
    ...(e.nodeHints.size > 0 ? { forNodes: [...e.nodeHints].sort().map((name) => ({ name })) } : {}),
  };
  return {
    addresses: [e.ip],
    conditions: { ready: e.ready, serving: e.serving, terminating: e.terminating },
    ...(e.nodeName ? { nodeName: e.nodeName } : {}),
    ...(e.zone ? { zone: e.zone } : {}),
    ...(Object.keys(hints).length > 0 ? { hints } : {}),
  } as NonNullable<EndpointSliceObject["endpoints"]>[number];
}

/**
 * An EndpointSlice that parses back to `held`. A slice left without usable endpoints has no
 * family to state and gives no endpoint either way: undefined (it is left out).
 */
export function rebuiltSlice(held: HeldSlice): EndpointSliceObject | undefined {
  const family = held.slice.endpoints[0]?.family;
  if (!family) return undefined;
  const slash = held.service.indexOf("/");
  const namespace = held.service.slice(0, slash);
  const service = held.service.slice(slash + 1);
  const ports = [];
  for (let i = 0; i < held.slice.ports.size; i++) {
    const p = held.slice.ports.at(i);
    ports.push({ name: p.name, port: p.port, protocol: p.protocol });
  }
  return {
    metadata: { name: held.name, namespace, labels: { [SERVICE_NAME_LABEL]: service } },
    addressType: family,
    ports,
    endpoints: held.slice.endpoints.map(endpointObject),
  };
}

/** The snapshot's objects: the delivered ones trimmed, the slices rebuilt. */
export function snapshotObjects(
  delivered: Pick<ObjectStore, "services" | "serviceCIDRs" | "node">,
  slices: Iterable<HeldSlice>,
): ObjectStore {
  const endpointSlices = new Map<string, EndpointSliceObject>();
  for (const held of slices) {
    const obj = rebuiltSlice(held);
    if (obj) endpointSlices.set(`${obj.metadata?.namespace}/${held.name}`, obj);
  }
  const services = new Map([...delivered.services].map(([k, s]) => [k, shareableService(s)]));
  const serviceCIDRs = new Map([...delivered.serviceCIDRs].map(([k, c]) => [k, shareableServiceCIDR(c)]));
  return {
    services,
    endpointSlices,
    serviceCIDRs,
    node: delivered.node ? shareableNode(delivered.node) : undefined,
  };
}

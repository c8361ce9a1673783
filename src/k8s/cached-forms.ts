// What the informers' caches keep of an object, when less than all of it will do. The cache is
// read again only to tell a change from a repeat (resourceVersion) and to hand a handler the
// last known state of an object that is gone; the proxy keeps its own parsed copy of the rest.
// Keeping every EndpointSlice whole (10,000 x 10 endpoints: about 25 MB of objects, twice that
// with the targetRefs and managedFields a real API server sends) doubled what the proxy holds.

import type { EndpointSliceObject } from "./objects.ts";

/** The label naming a slice's Service (the endpoints tracker files a deletion by it). */
const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/**
 * An EndpointSlice with what its deletion needs (name, namespace, resourceVersion, uid, the
 * service-name label, addressType) and no endpoints. Values are copied as they came, untrusted:
 * the tracker judges them on deletion as it did on arrival.
 */
export function endpointSliceIdentity(slice: EndpointSliceObject): EndpointSliceObject {
  const meta: unknown = slice.metadata;
  const m = (typeof meta === "object" && meta !== null ? meta : {}) as Record<string, unknown>;
  const labels: unknown = m.labels;
  const service =
    typeof labels === "object" && labels !== null && Object.hasOwn(labels, SERVICE_NAME_LABEL)
      ? { labels: { [SERVICE_NAME_LABEL]: (labels as Record<string, unknown>)[SERVICE_NAME_LABEL] } }
      : {};
  return {
    ...(slice.apiVersion !== undefined ? { apiVersion: slice.apiVersion } : {}),
    ...(slice.kind !== undefined ? { kind: slice.kind } : {}),
    metadata: {
      name: m.name,
      namespace: m.namespace,
      resourceVersion: m.resourceVersion,
      ...(m.uid !== undefined ? { uid: m.uid } : {}),
      ...service,
    },
    addressType: slice.addressType,
  } as EndpointSliceObject;
}

/** kubectl apply's copy of the whole object as it was applied, as one annotation. */
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/**
 * Drops, in place, the metadata nothing in kube-proxy reads and that can be bigger than the
 * rest of the object: managedFields (server-side apply's record of field owners) and kubectl's
 * last-applied-configuration annotation.
 */
export function dropUnreadMetadata(obj: object): void {
  const meta: unknown = (obj as { metadata?: unknown }).metadata;
  if (typeof meta !== "object" || meta === null) return;
  const m = meta as { managedFields?: unknown; annotations?: unknown };
  if ("managedFields" in m) delete m.managedFields;
  const annotations = m.annotations;
  if (typeof annotations === "object" && annotations !== null && Object.hasOwn(annotations, LAST_APPLIED))
    delete (annotations as Record<string, unknown>)[LAST_APPLIED];
}

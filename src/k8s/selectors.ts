// The server-side filters kube-proxy v1.37 puts on its informers (cmd/kube-proxy/app/server.go):
// Services and EndpointSlices share one label selector, so objects that belong to another
// service proxy, and headless Services' slices, never reach kube-proxy at all; since 1.32 the
// Service informer also asks for spec.clusterIP!=None, so headless Services are not listed or
// watched either (an API server before 1.31 ignores that field and sends them; the trackers
// skip them).

export const LABEL_SERVICE_PROXY_NAME = "service.kubernetes.io/service-proxy-name";
export const LABEL_HEADLESS = "service.kubernetes.io/headless";

/** Written the way apimachinery's Selector.String() prints it: requirements sorted by key. */
export const SERVICE_AND_SLICE_SELECTOR = `!${LABEL_HEADLESS},!${LABEL_SERVICE_PROXY_NAME}`;

/** Services that have a ClusterIP (not headless). */
export const SERVICE_FIELD_SELECTOR = "spec.clusterIP!=None";

/** Only this node's Node object. */
export function nodeFieldSelector(nodeName: string): string {
  return `metadata.name=${nodeName}`;
}

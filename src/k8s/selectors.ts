// The server-side filters kube-proxy v1.31 puts on its informers (cmd/kube-proxy/app/server.go):
// Services and EndpointSlices share one selector, so objects that belong to another service
// proxy, and headless Services with their slices, never reach kube-proxy at all.

export const LABEL_SERVICE_PROXY_NAME = "service.kubernetes.io/service-proxy-name";
export const LABEL_HEADLESS = "service.kubernetes.io/headless";

/** Written the way apimachinery's Selector.String() prints it: requirements sorted by key. */
export const SERVICE_AND_SLICE_SELECTOR = `!${LABEL_HEADLESS},!${LABEL_SERVICE_PROXY_NAME}`;

/** Only this node's Node object. */
export function nodeFieldSelector(nodeName: string): string {
  return `metadata.name=${nodeName}`;
}

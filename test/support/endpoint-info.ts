// A plain EndpointInfo for tests that hand endpoints to the modes directly (not through slices):
// ready, no hints, not local unless told.
import type { EndpointInfo } from "../../src/proxy/types.ts";
import { joinHostPort } from "../../src/util/net/host-port.ts";

export function endpointInfo(ip: string, port: number, fields: Partial<EndpointInfo> = {}): EndpointInfo {
  return {
    endpoint: joinHostPort(ip, port),
    ip,
    port,
    family: ip.includes(":") ? "IPv6" : "IPv4",
    nodeName: "",
    zone: "",
    isLocal: false,
    ready: true,
    serving: true,
    terminating: false,
    zoneHints: new Set(),
    nodeHints: new Set(),
    ...fields,
  };
}

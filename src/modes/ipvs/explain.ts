// `explain` in ipvs mode: reads the three things the mode programs, through the host clients
// (iptables-save, `ipset save`, the IPVS table), and walks a new connection through the iptables
// rules with the packet tracer (src/host/iptables/trace.ts), its ipset matches answered from the
// sets and its IPVS step from the virtual services: one path per real server, with its share of
// the weights; a virtual service without a real server rejects (IPVS answers port unreachable).

import { createIpsetClient } from "../../host/ipset/client.ts";
import type { IpsetSet } from "../../host/ipset/types.ts";
import { detectBackend } from "../../host/iptables/backend.ts";
import { createIptablesClient } from "../../host/iptables/client.ts";
import {
  type FlowPath,
  IptablesTracer,
  type IpvsDecision,
  type PacketFields,
  withNatAndFilter,
} from "../../host/iptables/trace.ts";
import { createIpvsClient } from "../../host/ipvs/client.ts";
import type { IpvsService } from "../../host/ipvs/types.ts";
import { cidrContains } from "../../util/net/address.ts";
import { familyOf } from "../../util/net/family.ts";
import { joinHostPort } from "../../util/net/host-port.ts";
import {
  type Cause,
  type ExplainHost,
  type ExplainPacket,
  type Explanation,
  namedFlowPath,
  summarize,
} from "../explain.ts";

type Dim = "ip" | "port" | "net";

const DIMS: Readonly<Record<string, readonly Dim[]>> = {
  "hash:ip": ["ip"],
  "hash:ip,port": ["ip", "port"],
  "hash:ip,port,ip": ["ip", "port", "ip"],
  "hash:ip,port,net": ["ip", "port", "net"],
  "hash:net": ["net"],
  "bitmap:port": ["port"],
};

const host = (ip: string) => `${ip}/${ip.includes(":") ? 128 : 32}`;

/** Whether one entry ("198.51.100.10,tcp:80", "30080", "...,203.0.113.0/25") holds the packet's fields. */
function entryHolds(
  entry: string,
  dims: readonly Dim[],
  dirs: readonly ("src" | "dst")[],
  pkt: PacketFields,
): boolean {
  const parts = entry.split(",");
  if (parts.length !== dims.length) return false;
  return dims.every((dim, k) => {
    const part = parts[k]!;
    const dir = dirs[k] ?? dirs[dirs.length - 1]!;
    if (dim === "port") {
      if (dir !== "dst") throw new Error(`an ipset match on the source port is not traced (${entry})`);
      const [proto, port] = part.includes(":") ? part.split(":") : [undefined, part];
      return (proto === undefined || proto === pkt.proto) && Number(port) === pkt.dport;
    }
    const ip = dir === "src" ? pkt.src : pkt.dst;
    return cidrContains(dim === "net" && part.includes("/") ? part : host(part), ip);
  });
}

function setMatcher(sets: ReadonlyMap<string, IpsetSet>) {
  return (name: string, dirs: readonly ("src" | "dst")[], pkt: PacketFields): boolean => {
    const set = sets.get(name);
    if (!set) throw new Error(`a rule matches ipset ${name}, which does not exist`);
    const dims = DIMS[set.spec.type];
    if (!dims) throw new Error(`ipset ${name} has a type the tracer does not know: ${set.spec.type}`);
    for (const entry of set.entries) if (entryHolds(entry, dims, dirs, pkt)) return true;
    return false;
  };
}

function ipvsStep(services: readonly IpvsService[]) {
  return (pkt: PacketFields): IpvsDecision => {
    const svc = services.find(
      (s) =>
        s.server.protocol.toLowerCase() === pkt.proto &&
        s.server.port === pkt.dport &&
        cidrContains(host(s.server.address), pkt.dst),
    );
    if (!svc) return { kind: "none" };
    const v = svc.server;
    const name = `${v.protocol} ${joinHostPort(v.address, v.port)} (${v.scheduler}${v.timeout > 0 ? `, persistent ${v.timeout}s` : ""})`;
    const live = svc.reals.filter((r) => r.weight > 0);
    const total = live.reduce((n, r) => n + r.weight, 0);
    if (live.length === 0) return { kind: "reject", service: name };
    return {
      kind: "dnat",
      service: name,
      virtual: { vaddr: v.address, vproto: v.protocol.toLowerCase(), vport: v.port },
      targets: live.map((r) => ({
        to: joinHostPort(r.address, r.port),
        share: r.weight / total,
        note: `weight ${r.weight}`,
      })),
    };
  };
}

function causeOf(p: FlowPath): Cause {
  const last = p.trail.at(-1) ?? "";
  if (last.startsWith("ipvs: ")) return "no-endpoints";
  if (last.includes("KUBE-SOURCE-RANGES-FIREWALL")) return "source-range";
  if (last.includes("KUBE-IPVS-FILTER")) return "invalid-cluster-port";
  if (/--ctstate INVALID\b/.test(last)) return "invalid-state";
  return "other";
}

export async function explainIpvs(h: ExplainHost, packet: ExplainPacket): Promise<Explanation> {
  const family = familyOf(packet.destination);
  const { backend } = await detectBackend(h.exec, h.log, h.backend);
  const iptables = createIptablesClient({ exec: h.exec, family, backend, logger: h.log });
  const rules = withNatAndFilter(await iptables.saveAll());
  const sets = await createIpsetClient({ exec: h.exec, logger: h.log }).listSets();
  const services = await createIpvsClient({ exec: h.exec, logger: h.log }).read();
  const tracer = new IptablesTracer(rules, h.localIPs, { inSet: setMatcher(sets), ipvs: ipvsStep(services) });
  const result = tracer.trace({
    source: packet.source,
    destination: packet.destination,
    port: packet.port,
    protocol: packet.protocol,
  });
  const save = family === "IPv4" ? "iptables-save" : "ip6tables-save";
  return summarize(
    "ipvs",
    packet,
    `${save} (${backend} backend), ipset save, ipvsadm`,
    result.paths.map((p) => namedFlowPath(p, causeOf)),
  );
}

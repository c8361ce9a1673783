// Upstream's ipvs proxier test checks (pkg/proxy/ipvs/proxier_test.go), restated over our fake
// host: a node whose eth0 carries exactly a case's addresses (upstream's fake netlink handle), the
// whole IPVS table as upstream's fake holds it (virtual servers with scheduler, persistence and
// real servers), ipset members, and a chain's rules read the way upstream's getRules reads them
// (the chain's "-A" lines in nat, then in filter), each judged by its jump, its match-set and
// its source, with the same count and order as upstream expects.

import type { IPFamily } from "../../../src/util/net/family.ts";
import { fakeHost, type Host } from "./harness.ts";

/** One virtual server: protocol, address, port, and its real servers as "addr:port wWEIGHT". */
export interface VS {
  proto: string;
  ip: string;
  port: number;
  reals: string[];
  /** Persistence timeout (ClientIP affinity); upstream's fake keeps 0 when unset. */
  timeout?: number;
}

/** A rule as upstream's expectations name it: its jump, the set it matches (none if unset), its source. */
export interface Rule {
  jump: string;
  set?: string;
  source?: string;
}

export const vs = (proto: string, ip: string, port: number, reals: string[], timeout = 0): VS => ({
  proto,
  ip,
  port,
  reals,
  timeout,
});

/** A real server at port 80 with weight 1, as upstream writes them. */
export const r80 = (ip: string) => `${ip}:80 w1`;

/** A node whose eth0 carries exactly `addresses` (upstream's SetLocalAddresses("eth0", ...)). */
export const nodeWith = (addresses: string[]): Host =>
  fakeHost(addresses.map((a) => (a.includes(":") ? `${a}/64` : `${a}/24`)));

const order = (a: VS, b: VS) => `${a.proto} ${a.ip} ${a.port}`.localeCompare(`${b.proto} ${b.ip} ${b.port}`);

/** The fake kernel's whole IPVS table, in a fixed order. */
export function ipvsTable(host: Host): (VS & { scheduler: string })[] {
  return host.ipvs
    .services()
    .map((v) => ({
      proto: v.server.protocol.toUpperCase(),
      ip: v.server.address,
      port: v.server.port,
      reals: v.reals.map((x) => `${x.address}:${x.port} w${x.weight}`).sort(),
      timeout: v.server.timeout,
      scheduler: v.server.scheduler,
    }))
    .sort(order);
}

/** `want` as ipvsTable shows it (scheduler rr, as upstream's default). */
export function expectedTable(want: VS[]): (VS & { scheduler: string })[] {
  return want.map((v) => ({ timeout: 0, ...v, scheduler: "rr", reals: [...v.reals].sort() })).sort(order);
}

/** A chain's rules as upstream's getRules reads them: nat first, then filter. */
export function chainRules(host: Host, chain: string, family: IPFamily = "IPv4"): string[] {
  return [...host.ipt[family].rules("nat", chain), ...host.ipt[family].rules("filter", chain)];
}

function matches(rule: string, e: Rule): boolean {
  const jump = new RegExp(`-j ${e.jump}(\\s|$)`).test(rule);
  const set = e.set ? rule.includes(`--match-set ${e.set} `) : !rule.includes("--match-set");
  const source = e.source ? rule.includes(`-s ${e.source}`) : true;
  return jump && set && source;
}

/** Upstream's checkIptables: the same number of rules, each matching in order. */
export function matchesExactly(rules: string[], expected: Rule[]): boolean {
  return rules.length === expected.length && expected.every((e, i) => matches(rules[i] ?? "", e));
}

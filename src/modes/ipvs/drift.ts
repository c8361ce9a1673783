// ipvs mode's drift: the virtual servers and real servers the last sync programmed (real servers
// still draining at weight 0) against the IPVS table as the kernel lists it, and the members of
// its ipsets against `ipset save`. Pure: both sides in, the differences out. Virtual servers of
// the other family or inside --ipvs-exclude-cidrs are not ours and are not looked at.

import type { IpsetSet } from "../../host/ipset/types.ts";
import type { IpvsService } from "../../host/ipvs/types.ts";
import type { Difference } from "../../proxy/drift.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { joinHostPort } from "../../util/net/host-port.ts";

/** A virtual server as the proxier's record holds it (VirtualServerView). */
export interface RecordedVirtualServer {
  readonly address: string;
  readonly port: number;
  readonly protocol: string;
  readonly scheduler: string;
  readonly timeout: number;
  readonly realServers: Iterable<{
    readonly address: string;
    readonly port: number;
    readonly weight: number;
  }>;
}

/** "TCP 198.51.100.1:80", as ipvsadm -Ln names a virtual server. */
function vsName(v: { readonly address: string; readonly port: number; readonly protocol: string }): string {
  return `${v.protocol.toUpperCase()} ${joinHostPort(v.address, v.port)}`;
}

function vsSettings(v: { readonly scheduler: string; readonly timeout: number }): string {
  return v.timeout > 0 ? `scheduler ${v.scheduler}, persistent ${v.timeout}` : `scheduler ${v.scheduler}`;
}

export interface IpvsDriftScope {
  readonly family?: IPFamily;
  /** Whether a virtual server's address is this proxier's to manage (family, not excluded). */
  readonly owns: (address: string) => boolean;
}

/** Every difference between the record and the kernel's table. */
export function ipvsDrift(
  recorded: Iterable<RecordedVirtualServer>,
  kernel: readonly IpvsService[],
  scope: IpvsDriftScope,
): Difference[] {
  const out: Difference[] = [];
  const family = scope.family ? { ipFamily: scope.family } : {};
  const inKernel = new Map<string, IpvsService>();
  for (const svc of kernel) if (scope.owns(svc.server.address)) inKernel.set(vsName(svc.server), svc);
  const seen = new Set<string>();
  for (const vs of recorded) {
    const name = vsName(vs);
    seen.add(name);
    const have = inKernel.get(name);
    if (!have) {
      out.push({ kind: "virtual-server", what: name, expected: vsSettings(vs), found: "absent", ...family });
      continue;
    }
    const want = vsSettings(vs);
    const got = vsSettings(have.server);
    if (want !== got) out.push({ kind: "virtual-server", what: name, expected: want, found: got, ...family });
    const reals = new Map<string, number>();
    for (const r of have.reals) reals.set(joinHostPort(r.address, r.port), r.weight);
    const wanted = new Set<string>();
    for (const r of vs.realServers) {
      const at = joinHostPort(r.address, r.port);
      wanted.add(at);
      const weight = reals.get(at);
      const what = `${name} -> ${at}`;
      if (weight === undefined)
        out.push({ kind: "real-server", what, expected: `weight ${r.weight}`, found: "absent", ...family });
      else if (weight !== r.weight)
        out.push({
          kind: "real-server",
          what,
          expected: `weight ${r.weight}`,
          found: `weight ${weight}`,
          ...family,
        });
    }
    for (const [at, weight] of reals)
      if (!wanted.has(at))
        out.push({
          kind: "real-server",
          what: `${name} -> ${at}`,
          expected: "absent",
          found: `weight ${weight}`,
          ...family,
        });
  }
  for (const [name, svc] of inKernel)
    if (!seen.has(name))
      out.push({
        kind: "virtual-server",
        what: name,
        expected: "absent",
        found: vsSettings(svc.server),
        ...family,
      });
  return out;
}

/** One of our sets as the record holds it: its name and the members the last sync wanted. */
export interface RecordedSet {
  readonly name: string;
  readonly members: Iterable<string>;
}

/** Every difference between our sets' members and the kernel's sets (as listSets() reads them). */
export function ipsetDrift(
  recorded: Iterable<RecordedSet>,
  kernel: ReadonlyMap<string, IpsetSet>,
  family?: IPFamily,
): Difference[] {
  const tag = family ? { ipFamily: family } : {};
  const out: Difference[] = [];
  for (const set of recorded) {
    const have = kernel.get(set.name);
    if (!have) {
      out.push({ kind: "set", what: `ipset ${set.name}`, expected: "present", found: "absent", ...tag });
      continue;
    }
    const wanted = new Set<string>();
    for (const m of set.members) {
      wanted.add(m);
      if (!have.entries.has(m))
        out.push({
          kind: "set-element",
          what: `ipset ${set.name} ${m}`,
          expected: "present",
          found: "absent",
          ...tag,
        });
    }
    for (const m of have.entries)
      if (!wanted.has(m))
        out.push({
          kind: "set-element",
          what: `ipset ${set.name} ${m}`,
          expected: "absent",
          found: "present",
          ...tag,
        });
  }
  return out;
}

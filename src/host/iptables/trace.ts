// A packet-flow tracer (for `explain` and the tests): walks the first packet of a NEW
// connection through the nat and filter tables of an iptables-save text (trace-rules.ts) the way
// the kernel's hooks would, and reports what kube-proxy's rules do with it: every path it can
// take (each branch of a -m statistic rule is followed, with its chance), the DNAT target or
// "DROP" / "REJECT" / "ACCEPT" it ends in, the rules on the way, and whether it is masqueraded.
// `output` sums it up in the terms of upstream's iptables proxier tests.
//
// The model: a packet whose source is a local address (loopback, or one of the node IPs) is
// locally originated and takes nat OUTPUT, filter OUTPUT, nat POSTROUTING and, when its
// (possibly translated) destination is local, filter INPUT; any other packet takes nat
// PREROUTING and then filter INPUT (local destination) or filter FORWARD and nat
// POSTROUTING. Conntrack state is NEW (plus DNAT once translated); -m recent --rcheck (session
// affinity) never matches, as on a first connection; MARK, KUBE-MARK-MASQ and the mark
// matches are evaluated on a packet mark. "Masqueraded" is what nat POSTROUTING does with the
// packet as it leaves the tables (for a dropped or locally delivered packet: would do).
// For ipvs mode the caller answers ipset matches and the IPVS step (TracerOptions): IPVS takes
// a local packet after nat OUTPUT, a remote one after filter INPUT, as the kernel's hooks order.

import { cidrContains, isLoopback } from "../../util/net/address.ts";
import { joinHostPort, splitHostPort } from "../../util/net/host-port.ts";
import { type Match, parseRuleTables, type Rule, type RuleTables } from "./trace-rules.ts";

export interface FlowPacket {
  readonly source: string;
  readonly protocol?: string;
  readonly destination: string;
  readonly port: number;
}

/** One way the packet can go: every -m statistic rule taken or not splits a path in two. */
export interface FlowPath {
  readonly verdict: "accept" | "drop" | "reject";
  /** "ip:port" ("[ip]:port" for IPv6) when DNATed. */
  readonly dnat: string | undefined;
  readonly masq: boolean;
  /** The chance a new connection takes this path (the product of its statistic rules' odds). */
  readonly probability: number;
  /** Whether a rule ended it explicitly (DROP, REJECT, ACCEPT, DNAT) rather than the policy. */
  readonly decided: boolean;
  /** The rules that matched on the way with a target, as "table: -A CHAIN ...", in order. */
  readonly trail: readonly string[];
}

/** A save with both tables the tracer walks: a node kube-proxy never ran on may lack them. */
export function withNatAndFilter(save: string): string {
  let out = save;
  for (const t of ["nat", "filter"]) if (!new RegExp(`^\\*${t}$`, "m").test(out)) out += `\n*${t}\nCOMMIT\n`;
  return out;
}

export interface FlowResult {
  readonly output: string;
  readonly masq: boolean;
  /** Every rule that matched, for failure messages. */
  readonly matched: readonly string[];
  readonly paths: readonly FlowPath[];
}

interface Packet {
  readonly src: string;
  readonly proto: string;
  readonly dst: string;
  readonly dport: number;
  readonly mark: number;
  readonly dnat?: string;
  readonly masqueraded: boolean;
  readonly prob: number;
  readonly trail: readonly string[];
  /** The IPVS virtual service that handled it (ipvs mode). */
  readonly vs?: IpvsVirtual;
}

/** A packet as the ipset and IPVS lookups see it. */
export interface PacketFields {
  readonly src: string;
  readonly dst: string;
  readonly proto: string;
  readonly dport: number;
}

export interface IpvsVirtual {
  readonly vaddr: string;
  readonly vproto: string;
  readonly vport: number;
}

/** What IPVS does with a packet that reaches it. */
export type IpvsDecision =
  | { readonly kind: "none" }
  /** A virtual service without a real server: IPVS answers ICMP port unreachable. */
  | { readonly kind: "reject"; readonly service: string }
  | {
      readonly kind: "dnat";
      readonly service: string;
      readonly virtual: IpvsVirtual;
      /** `to` "ip:port", `share` of new connections, `note` (weight) for the trail. */
      readonly targets: readonly { readonly to: string; readonly share: number; readonly note: string }[];
    };

export interface TracerOptions {
  /** Whether the packet's fields, taken in `dirs` order, make an entry of ipset `name`. */
  readonly inSet?: (name: string, dirs: readonly ("src" | "dst")[], pkt: PacketFields) => boolean;
  /** The node's IPVS table (ipvs mode). */
  readonly ipvs?: (pkt: PacketFields) => IpvsDecision;
}

/** One packet on its way through the hooks, with where the filter chains left it. */
interface Flow {
  readonly pkt: Packet;
  readonly verdict?: Verdict;
  readonly explicit: boolean;
}

type Verdict = "ACCEPT" | "DROP" | "REJECT";

/** One way a chain can end for a packet: a terminal verdict, a DNAT, or back to the caller. */
interface Branch {
  readonly pkt: Packet;
  readonly end: Verdict | "DNAT" | "MASQUERADE" | "continue";
}

const MAX_DEPTH = 32;

export class IptablesTracer {
  private readonly tables: RuleTables;
  private readonly localIPs: ReadonlySet<string>;
  private matched: string[] = [];

  /** `rules`: iptables-save text holding the nat and filter tables; `localIPs`: the node's own IPs. */
  constructor(
    rules: string,
    localIPs: readonly string[],
    private readonly options: TracerOptions = {},
  ) {
    this.tables = parseRuleTables(rules);
    for (const t of ["nat", "filter"]) if (!this.tables.has(t)) throw new Error(`no ${t} table in the rules`);
    this.localIPs = new Set(localIPs);
  }

  private isLocal(ip: string): boolean {
    return this.localIPs.has(ip) || isLoopback(ip);
  }

  trace(p: FlowPacket): FlowResult {
    this.matched = [];
    const start: Packet = {
      src: p.source,
      proto: (p.protocol ?? "tcp").toLowerCase(),
      dst: p.destination,
      dport: p.port,
      mark: 0,
      masqueraded: false,
      prob: 1,
      trail: [],
    };
    const outputs: string[] = [];
    const paths: FlowPath[] = [];
    let masq = false;
    const localOrigin = this.isLocal(start.src);
    for (const b of this.hook("nat", localOrigin ? "OUTPUT" : "PREROUTING", start)) {
      let flows: Flow[] = [{ pkt: b.pkt, explicit: false }];
      // IPVS (ipvs mode) takes a packet at LOCAL_OUT after nat OUTPUT, or at LOCAL_IN after the
      // filter INPUT chain.
      if (localOrigin) {
        flows = flows.flatMap((f) => this.ipvsStep(f));
        flows = flows.map((f) => this.filterHook(f, "OUTPUT"));
        flows = flows.map((f) => (this.isLocal(f.pkt.dst) ? this.filterHook(f, "INPUT") : f));
      } else if (this.isLocal(b.pkt.dst)) {
        flows = flows.map((f) => this.filterHook(f, "INPUT"));
        flows = flows.flatMap((f) => this.ipvsStep(f));
      } else flows = flows.map((f) => this.filterHook(f, "FORWARD"));
      for (const { pkt: cur, verdict, explicit } of flows) {
        // What nat POSTROUTING does (or would do) with the packet as it leaves.
        let leaving = cur;
        for (const post of this.hook("nat", "POSTROUTING", cur)) {
          masq ||= post.pkt.masqueraded;
          if (post.pkt.masqueraded) leaving = post.pkt;
        }
        const dead = verdict === "DROP" || verdict === "REJECT";
        paths.push({
          verdict: dead ? (verdict === "DROP" ? "drop" : "reject") : "accept",
          dnat: cur.dnat,
          masq: leaving.masqueraded,
          probability: cur.prob,
          decided: explicit || cur.dnat !== undefined,
          // The postrouting rules only show when they masquerade (every packet passes them).
          trail: leaving.masqueraded ? leaving.trail : cur.trail,
        });
        const out = dead ? verdict : (cur.dnat ?? verdict ?? "");
        if (out !== "" && !outputs.includes(out)) outputs.push(out);
      }
    }
    return { output: outputs.join(", "), masq, matched: this.matched, paths };
  }

  /** One filter hook for a packet not yet dropped or rejected. */
  private filterHook(f: Flow, h: string): Flow {
    if (f.verdict === "DROP" || f.verdict === "REJECT") return f;
    const ends = this.hook("filter", h, f.pkt);
    if (ends.length !== 1) throw new Error(`filter ${h} branched (a -m statistic rule in filter?)`);
    const e = ends[0]!;
    if (e.end === "DROP" || e.end === "REJECT") return { pkt: e.pkt, verdict: e.end, explicit: true };
    // An explicit ACCEPT of a packet nat left alone (e.g. a health-check NodePort).
    if (e.end === "ACCEPT") return { pkt: e.pkt, verdict: e.pkt.dnat ? f.verdict : "ACCEPT", explicit: true };
    return { ...f, pkt: e.pkt };
  }

  /** What IPVS does with a live packet: nothing, a reject, or one path per real server. */
  private ipvsStep(f: Flow): Flow[] {
    if (!this.options.ipvs || f.verdict === "DROP" || f.verdict === "REJECT") return [f];
    const { src, dst, proto, dport } = f.pkt;
    const d = this.options.ipvs({ src, dst, proto, dport });
    if (d.kind === "none") return [f];
    const hop = (text: string) => [...f.pkt.trail, `ipvs: ${text}`];
    if (d.kind === "reject") {
      return [
        { pkt: { ...f.pkt, trail: hop(`${d.service}: no real server`) }, verdict: "REJECT", explicit: true },
      ];
    }
    return d.targets.map((t) => {
      const hp = splitHostPort(t.to);
      if (!hp.ok) throw new Error(`bad IPVS real server ${t.to}: ${hp.error}`);
      return {
        ...f,
        pkt: {
          ...f.pkt,
          dst: hp.host,
          dport: Number(hp.port),
          dnat: joinHostPort(hp.host, hp.port),
          prob: f.pkt.prob * t.share,
          vs: d.virtual,
          trail: hop(`${d.service} -> ${t.to} (${t.note})`),
        },
      };
    });
  }

  /** A built-in chain's rules; "continue" means its policy (ACCEPT) applies. */
  private hook(table: string, chain: string, pkt: Packet): Branch[] {
    if (!this.tables.get(table)!.has(chain)) return [{ pkt, end: "continue" }];
    return this.run(table, chain, pkt, 0);
  }

  private run(table: string, chain: string, pkt: Packet, depth: number): Branch[] {
    if (depth > MAX_DEPTH) throw new Error(`jump depth over ${MAX_DEPTH} at ${table}/${chain}`);
    const rules = this.tables.get(table)!.get(chain);
    if (!rules) throw new Error(`jump to a chain that does not exist: ${table}/${chain}`);
    return this.from(table, rules, 0, pkt, depth);
  }

  /** Runs rules[i..] for pkt; every branch ends in a verdict or falls off the end ("continue"). */
  private from(table: string, rules: readonly Rule[], i: number, pkt: Packet, depth: number): Branch[] {
    for (; i < rules.length; i++) {
      const rule = rules[i]!;
      if (!rule.matches.every((m) => this.matches(m, pkt))) continue;
      this.matched.push(rule.raw);
      const t = rule.target;
      if (t.kind === "none") continue;
      const chance = rule.matches.find((m) => m.kind === "statistic")?.probability;
      const before = pkt;
      pkt = {
        ...pkt,
        trail: [...pkt.trail, `${table}: ${rule.raw}`],
        ...(chance === undefined ? {} : { prob: pkt.prob * chance }),
      };
      if (t.kind === "MARK") {
        if (rule.matches.some((m) => m.kind === "statistic"))
          throw new Error(`-m statistic on a MARK rule: ${rule.raw}`);
        pkt = { ...pkt, mark: ((pkt.mark & ~t.mask) ^ t.value) >>> 0 };
        continue;
      }
      const next = i + 1;
      const taken = this.take(table, rule, pkt, depth, (p) => this.from(table, rules, next, p, depth));
      // A random-probability rule both may and may not match: the "not taken" path follows.
      if (chance !== undefined && chance < 1)
        taken.push(...this.from(table, rules, i + 1, { ...before, prob: before.prob * (1 - chance) }, depth));
      return taken;
    }
    return [{ pkt, end: "continue" }];
  }

  /** The branches of a matched rule's (non-MARK) target; `rest` runs the rules after it. */
  private take(
    table: string,
    rule: Rule,
    pkt: Packet,
    depth: number,
    rest: (p: Packet) => Branch[],
  ): Branch[] {
    const t = rule.target;
    switch (t.kind) {
      case "RETURN":
        return [{ pkt, end: "continue" }];
      case "ACCEPT":
      case "DROP":
      case "REJECT":
        // (ipvs mode ends nat processing with ACCEPT: IPVS, not a DNAT rule, picks the backend.)
        if (table !== "filter" && t.kind !== "ACCEPT")
          throw new Error(`${t.kind} outside the filter table: ${rule.raw}`);
        return [{ pkt, end: t.kind }];
      case "DNAT": {
        if (table !== "nat") throw new Error(`DNAT outside the nat table: ${rule.raw}`);
        const hp = splitHostPort(t.to);
        if (!hp.ok) throw new Error(`bad --to-destination (${hp.error}): ${rule.raw}`);
        const to = joinHostPort(hp.host, hp.port);
        return [{ pkt: { ...pkt, dst: hp.host, dport: Number(hp.port), dnat: to }, end: "DNAT" }];
      }
      case "MASQUERADE":
        if (table !== "nat") throw new Error(`MASQUERADE outside the nat table: ${rule.raw}`);
        return [{ pkt: { ...pkt, masqueraded: true }, end: "MASQUERADE" }];
      case "jump": {
        const out: Branch[] = [];
        for (const b of this.run(table, t.chain, pkt, depth + 1)) {
          // Back from the called chain: continue after the jump with the packet as it returned.
          if (b.end === "continue") out.push(...rest(b.pkt));
          else out.push(b);
        }
        return out;
      }
      default:
        throw new Error(`unexpected target in rule: ${rule.raw}`);
    }
  }

  private matches(m: Match, pkt: Packet): boolean {
    switch (m.kind) {
      case "src":
      case "dst": {
        const ip = m.kind === "src" ? pkt.src : pkt.dst;
        const cidr = m.cidr.includes("/") ? m.cidr : `${m.cidr}/${m.cidr.includes(":") ? 128 : 32}`;
        return cidrContains(cidr, ip) !== m.neg;
      }
      case "proto":
        return (pkt.proto === m.proto) !== m.neg;
      case "dport":
        return (pkt.dport === m.port) !== m.neg;
      case "addrtype": {
        if (m.type !== "LOCAL") throw new Error(`unsupported addrtype ${m.type}`);
        return this.isLocal(m.dir === "src" ? pkt.src : pkt.dst) !== m.neg;
      }
      case "ctstate": {
        const states = pkt.dnat ? ["NEW", "DNAT"] : ["NEW"];
        return m.states.some((s) => states.includes(s)) !== m.neg;
      }
      case "mark":
        return ((pkt.mark & m.mask) >>> 0 === m.value) !== m.neg;
      case "statistic":
        return true;
      case "recent":
        return !m.check;
      case "set":
        if (!this.options.inSet) throw new Error(`an ipset match without the node's ipsets: ${m.name}`);
        return this.options.inSet(m.name, m.dirs, pkt) !== m.neg;
      case "physdev-is-in":
        // The tracer's packets never come in over a bridge port.
        return m.neg;
      case "ipvs": {
        const vs = pkt.vs;
        if (!vs) return false;
        return (
          (m.vaddr === undefined || m.vaddr === vs.vaddr) &&
          (m.vproto === undefined || m.vproto === vs.vproto) &&
          (m.vport === undefined || m.vport === vs.vport)
        );
      }
    }
  }
}

/** Traces one packet through `rules` (iptables-save text) on a node with `localIPs`. */
export function tracePacket(
  rules: string,
  localIPs: readonly string[],
  p: FlowPacket,
  options: TracerOptions = {},
): FlowResult {
  return new IptablesTracer(rules, localIPs, options).trace(p);
}

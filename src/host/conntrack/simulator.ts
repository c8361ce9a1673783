// A stateful stand-in for the conntrack binary (tests and replay): a flow table that -D and -L filter for
// real, answering through a SimulatedExec; flow() builds the entries a test starts with.

import { isIPv6 } from "node:net";
import { SimulatedExec } from "../../exec/simulated.ts";
import type { ExecRequest, ExecResult } from "../../exec/types.ts";
import type { LowerProtocol } from "../../util/net/protocol.ts";

export interface FlowTuple {
  readonly src: string;
  readonly dst: string;
  readonly sport: number;
  readonly dport: number;
}

export interface ConntrackFlow {
  readonly protocol: LowerProtocol;
  readonly orig: FlowTuple;
  /** The reply direction; a DNATed flow's reply comes from the endpoint, not the Service IP. */
  readonly reply: FlowTuple;
}

const PROTO_NUMBERS: Readonly<Record<string, number>> = { tcp: 6, udp: 17, sctp: 132 };

/** A flow as the kernel records it; `dnatTo` makes the reply come from that endpoint. */
export function flow(
  protocol: ConntrackFlow["protocol"],
  orig: FlowTuple,
  dnatTo?: { ip: string; port: number },
): ConntrackFlow {
  const reply = {
    src: dnatTo?.ip ?? orig.dst,
    dst: orig.src,
    sport: dnatTo?.port ?? orig.dport,
    dport: orig.sport,
  };
  return { protocol, orig, reply };
}

interface Filter {
  protocol?: string;
  origDst?: string;
  origSrc?: string;
  dport?: number;
  /** undefined: no filter; "": any DNATed flow; else DNATed to this address. */
  dstNat?: string;
  replySrc?: string;
  replySport?: number;
  v6: boolean;
}

function tupleText(t: FlowTuple): string {
  return `src=${t.src} dst=${t.dst} sport=${t.sport} dport=${t.dport}`;
}

/** A stateful stand-in for the conntrack binary: a flow table that -D and -L filter for real. */
export class SimulatedConntrack {
  flows: ConntrackFlow[] = [];
  version = "1.4.7";

  add(...flows: ConntrackFlow[]): this {
    this.flows.push(...flows);
    return this;
  }

  private banner(msg: string): string {
    return `conntrack v${this.version} (conntrack-tools): ${msg}\n`;
  }

  private usage(code: number, msg: string): ExecResult {
    return {
      code,
      stdout: "",
      stderr: `${this.banner(msg)}Try \`conntrack -h' or 'conntrack --help' for more information.\n`,
    };
  }

  private matches(f: ConntrackFlow, filter: Filter): boolean {
    if (isIPv6(f.orig.src) !== filter.v6) return false;
    if (filter.protocol !== undefined && f.protocol !== filter.protocol) return false;
    if (filter.origDst !== undefined && f.orig.dst !== filter.origDst) return false;
    if (filter.origSrc !== undefined && f.orig.src !== filter.origSrc) return false;
    if (filter.dport !== undefined && f.orig.dport !== filter.dport) return false;
    if (filter.replySrc !== undefined && f.reply.src !== filter.replySrc) return false;
    if (filter.replySport !== undefined && f.reply.sport !== filter.replySport) return false;
    if (filter.dstNat !== undefined) {
      const dnat = f.reply.src !== f.orig.dst;
      if (!dnat || (filter.dstNat !== "" && f.reply.src !== filter.dstNat)) return false;
    }
    return true;
  }

  private line(f: ConntrackFlow): string {
    const n = PROTO_NUMBERS[f.protocol] ?? 0;
    return `${f.protocol.padEnd(8)} ${n} 30 ${tupleText(f.orig)} ${tupleText(f.reply)} mark=0 use=1\n`;
  }

  handle(req: ExecRequest): ExecResult {
    if (req.args[0] === "--load-file" || req.args[0] === "-R") return this.batch(req);
    return this.command(req.args);
  }

  /**
   * `--load-file FILE`: each line is a command; deleted flows are printed, without totals. The
   * fake reads the lines from stdin, where the client also puts them.
   */
  private batch(req: ExecRequest): ExecResult {
    if (!req.args[1]) return this.usage(2, "--load-file needs a file");
    const text = typeof req.stdin === "string" ? req.stdin : "";
    let stdout = "";
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      const r = this.command(line.trim().split(/\s+/));
      if (r.code > 1) return { code: r.code, stdout, stderr: r.stderr };
      stdout += r.stdout;
    }
    return { code: 0, stdout, stderr: "" };
  }

  private command(args: readonly string[]): ExecResult {
    let command: "-D" | "-L" | undefined;
    const filter: Filter = { v6: false };
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      const next = () => args[++i] ?? "";
      if (a === "-V" || a === "--version") {
        return { code: 0, stdout: `conntrack v${this.version} (conntrack-tools)\n`, stderr: "" };
      }
      if (a === "-D" || a === "--delete") command = "-D";
      else if (a === "-L" || a === "--dump") command = "-L";
      else if (a === "-p" || a === "--proto") {
        const p = next().toLowerCase();
        if (!(p in PROTO_NUMBERS)) return this.usage(2, `\`${p}' unsupported protocol`);
        filter.protocol = p;
      } else if (a === "-d" || a === "--orig-dst" || a === "--dst") filter.origDst = next();
      else if (a === "-s" || a === "--orig-src" || a === "--src") filter.origSrc = next();
      else if (a === "--dport" || a === "--orig-port-dst") filter.dport = Number(next());
      else if (a === "--reply-src") filter.replySrc = next();
      else if (a === "--reply-port-src") filter.replySport = Number(next());
      else if (a === "--dst-nat") {
        // The address is optional: a bare --dst-nat matches any DNATed flow.
        const v = args[i + 1];
        filter.dstNat = v !== undefined && !v.startsWith("-") ? next() : "";
      } else if (a === "-f" || a === "--family") {
        const fam = next();
        if (fam !== "ipv4" && fam !== "ipv6") return this.usage(2, `Unknown family \`${fam}'`);
        filter.v6 = fam === "ipv6";
      } else return this.usage(2, `unknown option \`${a}'`);
    }
    if (!command) return this.usage(2, "no command specified");
    const hit = this.flows.filter((f) => this.matches(f, filter));
    const out = hit.map((f) => this.line(f)).join("");
    if (command === "-L") {
      return { code: 0, stdout: out, stderr: this.banner(`${hit.length} flow entries have been shown.`) };
    }
    this.flows = this.flows.filter((f) => !hit.includes(f));
    return {
      code: hit.length > 0 ? 0 : 1,
      stdout: out,
      stderr: this.banner(`${hit.length} flow entries have been deleted.`),
    };
  }

  install(exec: SimulatedExec = new SimulatedExec()): SimulatedExec {
    return exec.on("conntrack", (req) => this.handle(req));
  }
}

// SimulatedIpvs: the kernel's IPVS table behind a stand-in ipvsadm (1.31), answering through a
// SimulatedExec so tests drive the real IpvsClient and assert on the resulting virtual and real
// servers. Messages, exit codes, listing order and the line-by-line --restore semantics follow
// ipvsadm on a real kernel (test/vm/ipvs-fake-vs-real.vm.ts checks them): a refused line prints
// ipvs_strerror() text and the next line still runs; a command-line error ends the run with
// exit 2, a failed listing with exit 1, -h and -v with exit 0; the exit status is that of the
// last line.
//
// Not modelled: names instead of numbers (-L and -S without -n), --nosort's service order (the
// kernel's hash order), fwmark services, traffic counters, connection entries, sync daemons,
// and the kernel refusing IPv4 real servers in a namespace with no address at all (lo down).

import { SimulatedExec } from "../../exec/simulated.ts";
import type { ExecResult, TextExecRequest } from "../../exec/types.ts";
import { joinHostPort } from "../../util/net/host-port.ts";
import { IPVS_UNAVAILABLE_MESSAGE } from "./errors.ts";
import {
  formatIpvsList,
  formatIpvsSave,
  type ListedDest,
  type ListedService,
  sortServices,
} from "./format.ts";
import { KERNEL_SCHEDULERS } from "./restore-text.ts";
import {
  type DestSpec,
  type IpvsadmCommand,
  parseIpvsadmArgs,
  restoreLineWords,
  type ServiceSpec,
  SVC_F_PERSISTENT,
  schedFlagNames,
} from "./syntax.ts";
import type { IpvsService, IpvsTimeouts, VirtualServerKey } from "./types.ts";

/** Schedulers a stock kernel ships as ip_vs_* modules (the only ones restore-text writes). */
export { KERNEL_SCHEDULERS };

export interface SimulatedIpvsOptions {
  /** false: every call fails like a kernel without IPVS. Default true. */
  available?: boolean;
  /** Scheduler modules the kernel can load. */
  schedulers?: readonly string[];
}

interface Dest {
  address: string;
  port: number;
  weight: number;
  forward: DestSpec["forward"];
  upperThreshold: number;
  lowerThreshold: number;
  active: number;
  inactive: number;
}

interface Service {
  spec: ServiceSpec;
  /** In the kernel's order: newest first (it adds real servers at the head of the list). */
  dests: Dest[];
}

/** ipvsadm's exit after printing a failed listing (list_service()/list_all() exit(1)). */
const LIST_FAILURE_EXIT = 1;

const keyId = (k: VirtualServerKey) => `${k.protocol}/${joinHostPort(k.address, k.port)}`;
const destId = (d: { address: string; port: number }) => joinHostPort(d.address, d.port);

// Kernel defaults (seconds) for established TCP, TCP FIN_WAIT and UDP.
const DEFAULT_TIMEOUTS: IpvsTimeouts = { tcp: 900, tcpFin: 120, udp: 300 };

class KernelError {
  constructor(
    readonly message: string,
    /** Ends the whole run (and a --restore) with this status, as a failed listing does. */
    readonly exitNow?: number,
  ) {}
}

/** A command that prints and then ends the run with exit 0 (-h, -v), even inside --restore. */
class FinalOutput {
  constructor(readonly text: string) {}
}

// ip_vs_ctl refuses real servers whose address is not unicast (-EINVAL): for IPv4 what
// inet_addr_type() calls broadcast or multicast, for IPv6 multicast and the unspecified address.
function unicastDest(address: string): boolean {
  if (address.includes(":")) return !/^ff/i.test(address) && address !== "::";
  const first = Number(address.split(".")[0]);
  return address !== "255.255.255.255" && first !== 0 && !(first >= 224 && first <= 239);
}
const EINVAL_MESSAGE = "Invalid operation.  Possibly wrong module version, address not unicast, ...";

export class SimulatedIpvs {
  /** Flip to false to make the next calls fail as on a kernel without IPVS. */
  available: boolean;
  readonly schedulers: Set<string>;
  private readonly table = new Map<string, Service>();
  private timeoutValues: IpvsTimeouts = { ...DEFAULT_TIMEOUTS };

  constructor(opts: SimulatedIpvsOptions = {}) {
    this.available = opts.available ?? true;
    this.schedulers = new Set(opts.schedulers ?? KERNEL_SCHEDULERS);
  }

  /** Registers this fake as the "ipvsadm" program of `exec` (a new SimulatedExec by default). */
  install(exec: SimulatedExec = new SimulatedExec()): SimulatedExec {
    return exec.on("ipvsadm", (req) => this.handle(req));
  }

  // ---- state inspection and seeding for tests ----

  /** The table as IpvsClient.read() reports it, in ipvsadm's order. */
  services(): IpvsService[] {
    return sortServices(this.listed()).map(({ service: s, dests }) => ({
      server: {
        ...s.key,
        scheduler: s.scheduler,
        flags: schedFlagNames(s.scheduler, s.flags),
        timeout: s.flags & SVC_F_PERSISTENT ? s.timeout : 0,
      },
      reals: dests.map((d) => ({
        address: d.address,
        port: d.port,
        weight: d.weight,
        activeConnections: d.activeConnections,
        inactiveConnections: d.inactiveConnections,
      })),
    }));
  }

  timeouts(): IpvsTimeouts {
    return { ...this.timeoutValues };
  }

  /** Sets a real server's connection counts (what graceful termination waits on). */
  setConnections(
    vs: VirtualServerKey,
    real: { address: string; port: number },
    active: number,
    inactive: number,
  ): void {
    const dest = this.table.get(keyId(vs))?.dests.find((d) => destId(d) === destId(real));
    if (!dest)
      throw new Error(`SimulatedIpvs.setConnections: no real server ${destId(real)} in ${keyId(vs)}`);
    dest.active = active;
    dest.inactive = inactive;
  }

  /** Applies `ipvsadm -S` / --restore text directly; throws if any line is refused. */
  load(text: string): void {
    const res = this.restore(text, "ipvsadm");
    if (res.code !== 0 || res.stderr !== "") throw new Error(`SimulatedIpvs.load: ${res.stderr.trim()}`);
  }

  /** `ipvsadm -S -n` text of the current table. */
  save(): string {
    return formatIpvsSave(this.listed());
  }

  /** `ipvsadm -L -n` text of the current table. */
  list(): string {
    return formatIpvsList(this.listed());
  }

  reset(): void {
    this.table.clear();
    this.timeoutValues = { ...DEFAULT_TIMEOUTS };
  }

  // ---- the binary ----

  handle(req: TextExecRequest): ExecResult {
    const program = req.cmd;
    if (!this.available) return { code: 2, stdout: "", stderr: `${IPVS_UNAVAILABLE_MESSAGE}\n` };
    if (req.args.length === 0) return { code: 0, stdout: this.list(), stderr: "" };
    const res = parseIpvsadmArgs(req.args, program);
    if (!res.ok) return { code: res.exit, stdout: "", stderr: `${res.message}\n` };
    if (res.command.kind === "restore") return this.restore(req.stdin ?? "", program);
    const out = this.execute(res.command);
    if (out instanceof FinalOutput) return { code: 0, stdout: out.text, stderr: "" };
    return out instanceof KernelError
      ? { code: out.exitNow ?? 255, stdout: "", stderr: `${out.message}\n` }
      : { code: 0, stdout: out, stderr: "" };
  }

  private restore(input: string, program: string): ExecResult {
    let stdout = "";
    let stderr = "";
    let last = 0;
    const lines = input.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    for (const line of lines) {
      const words = restoreLineWords(line);
      if (words.length === 0) continue;
      const res = parseIpvsadmArgs(words, program);
      if (!res.ok) {
        stderr += `${res.message}\n`;
        if (res.fatal) return { code: res.exit, stdout, stderr };
        last = -1;
        continue;
      }
      // A nested --restore is refused the way ipvsadm refuses it (it would loop on stdin).
      if (res.command.kind === "restore") {
        stderr += `Try \`${program} -h' or '${program} --help' for more information.\n`;
        return { code: 255, stdout, stderr };
      }
      const out = this.execute(res.command);
      if (out instanceof FinalOutput) return { code: 0, stdout: stdout + out.text, stderr };
      if (out instanceof KernelError) {
        stderr += `${out.message}\n`;
        if (out.exitNow !== undefined) return { code: out.exitNow, stdout, stderr };
        last = -1;
      } else {
        stdout += out;
        last = 0;
      }
    }
    return { code: last === 0 ? 0 : 255, stdout, stderr };
  }

  private execute(cmd: IpvsadmCommand): string | KernelError | FinalOutput {
    switch (cmd.kind) {
      case "help":
        // An abbreviated usage (ipvsadm prints its version and a long option list).
        return new FinalOutput(
          "ipvsadm v1.31 2019/12/24 (compiled with popt and IPVS v1.2.1)\nUsage:\n  ipvsadm -A|E virtual-service [-s scheduler] [-p [timeout]] ...\n",
        );
      case "version":
        return new FinalOutput("ipvsadm v1.31 2019/12/24 (compiled with popt and IPVS v1.2.1)\n");
      case "list":
        return this.listCommand(cmd);
      case "save":
        return this.save();
      case "flush":
        this.table.clear();
        return "";
      case "zero":
        if (cmd.key && !this.table.has(keyId(cmd.key))) return new KernelError("No such service");
        return "";
      case "set":
        this.timeoutValues = {
          tcp: cmd.tcp || this.timeoutValues.tcp,
          tcpFin: cmd.tcpFin || this.timeoutValues.tcpFin,
          udp: cmd.udp || this.timeoutValues.udp,
        };
        return "";
      case "add-service": {
        const id = keyId(cmd.service.key);
        if (this.table.has(id)) return new KernelError("Service already exists");
        if (!this.schedulers.has(cmd.service.scheduler))
          return new KernelError("Scheduler or persistence engine not found");
        this.table.set(id, { spec: cmd.service, dests: [] });
        return "";
      }
      case "edit-service": {
        const svc = this.table.get(keyId(cmd.service.key));
        if (!svc) return new KernelError("No such service");
        if (!this.schedulers.has(cmd.service.scheduler))
          return new KernelError("Scheduler or persistence engine not found");
        svc.spec = cmd.service;
        return "";
      }
      case "delete-service":
        if (!this.table.delete(keyId(cmd.key!))) return new KernelError("No such service");
        return "";
      case "add-server":
      case "edit-server":
      case "delete-server":
        return this.destCommand(cmd);
      default:
        return "";
    }
  }

  private destCommand(
    cmd: Extract<IpvsadmCommand, { kind: "add-server" | "edit-server" | "delete-server" }>,
  ): string | KernelError {
    const svc = this.table.get(keyId(cmd.key));
    if (!svc) return new KernelError("Service not defined");
    const at = svc.dests.findIndex((d) => destId(d) === destId(cmd.dest));
    if (cmd.kind !== "delete-server" && !unicastDest(cmd.dest.address))
      return new KernelError(EINVAL_MESSAGE);
    if (cmd.kind === "add-server") {
      if (at >= 0) return new KernelError("Destination already exists");
      svc.dests.unshift({
        address: cmd.dest.address,
        port: cmd.dest.port,
        weight: cmd.dest.weight,
        forward: cmd.dest.forward,
        upperThreshold: cmd.dest.upperThreshold ?? 0,
        lowerThreshold: cmd.dest.lowerThreshold ?? 0,
        active: 0,
        inactive: 0,
      });
      return "";
    }
    if (at < 0) return new KernelError("No such destination");
    if (cmd.kind === "delete-server") svc.dests.splice(at, 1);
    else {
      const d = svc.dests[at]!;
      d.weight = cmd.dest.weight;
      d.forward = cmd.dest.forward;
      d.upperThreshold = cmd.dest.upperThreshold ?? 0;
      d.lowerThreshold = cmd.dest.lowerThreshold ?? 0;
    }
    return "";
  }

  private listCommand(cmd: Extract<IpvsadmCommand, { kind: "list" }>): string | KernelError {
    if (cmd.what === "timeout") {
      const t = this.timeoutValues;
      return `Timeout (tcp tcpfin udp): ${t.tcp} ${t.tcpFin} ${t.udp}\n`;
    }
    if (cmd.what === "connections")
      return "IPVS connection entries\npro expire state       source             virtual            destination\n";
    if (cmd.what === "daemon") return "";
    const style = { format: cmd.format, nosort: cmd.nosort };
    if (cmd.key) {
      const one = this.listed().filter((s) => keyId(s.service.key) === keyId(cmd.key!));
      if (one.length === 0) return new KernelError("No such service", LIST_FAILURE_EXIT);
      return formatIpvsList(one, { header: false, ...style });
    }
    return formatIpvsList(this.listed(), style);
  }

  private listed(): ListedService[] {
    return [...this.table.values()].map((s) => ({
      service: s.spec,
      dests: s.dests.map(
        (d): ListedDest => ({
          address: d.address,
          port: d.port,
          weight: d.weight,
          forward: d.forward,
          upperThreshold: d.upperThreshold,
          lowerThreshold: d.lowerThreshold,
          activeConnections: d.active,
          inactiveConnections: d.inactive,
        }),
      ),
    }));
  }
}

export function createSimulatedIpvs(opts: SimulatedIpvsOptions = {}): SimulatedIpvs {
  return new SimulatedIpvs(opts);
}

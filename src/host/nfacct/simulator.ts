// A stateful stand-in for the nfacct binary (tests and replay): named counters that tests bump with
// count(), answering through a SimulatedExec.

import { SimulatedExec } from "../../exec/simulated.ts";
import type { ExecRequest, ExecResult } from "../../exec/types.ts";
import type { NfacctCounters } from "./types.ts";

const pad20 = (n: number) => String(n).padStart(20, "0");

/** A stateful stand-in for the nfacct binary: named counters that tests bump with count(). */
export class SimulatedNfacct {
  private readonly objects = new Map<string, { packets: number; bytes: number }>();
  /** False models a kernel without nfnetlink_acct: every command fails as nfacct does there. */
  supported = true;
  version = "1.0.2";

  /** Counters by name, for assertions. */
  get names(): string[] {
    return [...this.objects.keys()];
  }

  counters(name: string): NfacctCounters | undefined {
    const o = this.objects.get(name);
    return o ? { ...o } : undefined;
  }

  /** Simulates traffic matching a rule that uses this counter. */
  count(name: string, packets: number, bytes = packets * 64): void {
    const o = this.objects.get(name);
    if (!o) throw new Error(`SimulatedNfacct: no counter ${name}`);
    o.packets += packets;
    o.bytes += bytes;
  }

  private error(msg: string): ExecResult {
    return { code: 1, stdout: "", stderr: `nfacct v${this.version}: error: ${msg}\n` };
  }

  private line(name: string): string {
    const o = this.objects.get(name)!;
    return `{ pkts = ${pad20(o.packets)}, bytes = ${pad20(o.bytes)} } = ${name};\n`;
  }

  handle(req: ExecRequest): ExecResult {
    const [cmd, name, extra] = req.args;
    if (cmd === "version" || cmd === "-v" || cmd === "--version") {
      return {
        code: 0,
        stdout: `nfacct v${this.version}: utility for the Netfilter extended accounting infrastructure\n`,
        stderr: "",
      };
    }
    if (!this.supported) return this.error("Protocol not supported");
    const reset = extra === "reset" || (cmd === "list" && name === "reset");
    switch (cmd) {
      case "list": {
        const out = [...this.objects.keys()].map((n) => this.line(n)).join("");
        if (reset) for (const o of this.objects.values()) Object.assign(o, { packets: 0, bytes: 0 });
        return { code: 0, stdout: out, stderr: "" };
      }
      case "add":
        if (!name) return this.error("missing object name");
        if (this.objects.has(name)) return this.error("Device or resource busy");
        this.objects.set(name, { packets: 0, bytes: 0 });
        return { code: 0, stdout: "", stderr: "" };
      case "get": {
        if (!name || !this.objects.has(name)) return this.error("No such file or directory");
        const out = this.line(name);
        if (reset) Object.assign(this.objects.get(name)!, { packets: 0, bytes: 0 });
        return { code: 0, stdout: out, stderr: "" };
      }
      case "delete":
        if (!name || !this.objects.has(name)) return this.error("No such file or directory");
        this.objects.delete(name);
        return { code: 0, stdout: "", stderr: "" };
      case "flush":
        this.objects.clear();
        return { code: 0, stdout: "", stderr: "" };
      default:
        return { code: 1, stdout: "", stderr: `nfacct v${this.version}: Unknown command: ${cmd ?? ""}\n` };
    }
  }

  install(exec: SimulatedExec = new SimulatedExec()): SimulatedExec {
    return exec.on("nfacct", (req) => this.handle(req));
  }
}

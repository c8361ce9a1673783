// Typed client for the nfacct tool: the named packet counters the iptables proxier attaches to
// its localhost NodePort rule (-m nfacct --nfacct-name localhost_nps_accepted_pkts) and reads
// for the kubeproxy_iptables_localhost_nodeports_accepted_packets_total metric.
// A stateful FakeNfacct lives at the end of this file.

import { FakeExec } from "../exec/fake.ts";
import type { Exec, ExecRequest, ExecResult } from "../exec/types.ts";
import { type Logger, nullLogger } from "../log/logger.ts";

/** The kernel's name limit (NFACCT_NAME_MAX, 32) less the terminating NUL. */
export const MAX_NFACCT_NAME = 31;

export interface NfacctCounters {
  readonly packets: number;
  readonly bytes: number;
}

export interface NfacctObject extends NfacctCounters {
  readonly name: string;
}

export interface NfacctClient {
  /** Whether nfacct is installed and the kernel answers (nfnetlink_acct). */
  available(): Promise<boolean>;
  /** Creates the counter; an existing one is left as it is. */
  ensure(name: string): Promise<void>;
  /** The counter's values, or undefined when there is no counter by that name. */
  get(name: string): Promise<NfacctCounters | undefined>;
}

export class NfacctError extends Error {
  override readonly name = "NfacctError";
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`nfacct ${args.join(" ")}: exit code ${exitCode}: ${stderr.trim() || "(no output)"}`);
  }
}

// "{ pkts = 00000000000000000012, bytes = 00000000000000000840 } = name;" (quota objects add fields)
const OBJECT_LINE = /\{\s*pkts\s*=\s*(\d+),\s*bytes\s*=\s*(\d+)[^}]*\}\s*=\s*([^;\s]+);/g;

/** Parses `nfacct list` / `nfacct get` output. Counters above 2^53 lose precision (never in practice). */
export function parseNfacctOutput(text: string): NfacctObject[] {
  return [...text.matchAll(OBJECT_LINE)].map((m) => ({
    name: m[3]!,
    packets: Number(m[1]),
    bytes: Number(m[2]),
  }));
}

export interface NfacctClientOptions {
  exec: Exec;
  logger?: Logger;
}

const TIMEOUT_MS = 10_000;
// The kernel answers EBUSY to adding a name that exists (nfacct prints strerror).
const EXISTS = /Device or resource busy|File exists/;
const MISSING = /No such file or directory/;

export function createNfacctClient({ exec, logger = nullLogger }: NfacctClientOptions): NfacctClient {
  const log = logger.named("nfacct");
  const run = (args: string[]) => exec.run({ cmd: "nfacct", args, timeoutMs: TIMEOUT_MS });
  const checkName = (name: string) => {
    if (name === "" || name.length > MAX_NFACCT_NAME) {
      throw new Error(`invalid nfacct name ${JSON.stringify(name)}: 1 to ${MAX_NFACCT_NAME} characters`);
    }
  };
  return {
    async available() {
      const res = await run(["list"]);
      if (res.code !== 0)
        log.v(2).info("nfacct is not usable", { code: res.code, stderr: res.stderr.trim() });
      return res.code === 0;
    },
    async ensure(name) {
      checkName(name);
      const res = await run(["add", name]);
      if (res.code === 0 || (res.code === 1 && EXISTS.test(res.stderr))) return;
      throw new NfacctError(["add", name], res.code, res.stderr);
    },
    async get(name) {
      checkName(name);
      const res = await run(["get", name]);
      if (res.code !== 0) {
        if (res.code === 1 && MISSING.test(res.stderr)) return undefined;
        throw new NfacctError(["get", name], res.code, res.stderr);
      }
      const obj = parseNfacctOutput(res.stdout).find((o) => o.name === name);
      if (!obj) throw new NfacctError(["get", name], res.code, `unparseable output: ${res.stdout.trim()}`);
      return { packets: obj.packets, bytes: obj.bytes };
    },
  };
}

// ---- FakeNfacct ----

const pad20 = (n: number) => String(n).padStart(20, "0");

/** A stateful stand-in for the nfacct binary: named counters that tests bump with count(). */
export class FakeNfacct {
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
    if (!o) throw new Error(`FakeNfacct: no counter ${name}`);
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

  install(exec: FakeExec = new FakeExec()): FakeExec {
    return exec.on("nfacct", (req) => this.handle(req));
  }
}

// Probe client for real-kernel tests, run inside a namespace:
//   bun test/support/e2e-probe.ts --proto tcp|udp --target IP:PORT [--source IP]
//       [--count N] [--interval-ms MS] [--timeout-ms MS] [--duration-ms MS] [--stream]
// Makes up to N attempts (a new connection / socket each time, so each is a new conntrack
// flow), stopping early once --duration-ms has passed. Prints one JSON summary line:
//   {"ok":true,"attempts":N,"okCount":N,"backends":{"pod1":3},"errors":{},"results":[...]}
// where each result is {"ok","reply"?,"error"?,"ms","t"}; error is "refused" (ECONNREFUSED:
// an ICMP port-unreachable / REJECT), "timeout", "unreachable", "reset", "bad-reply" or an errno
// code. With --stream every result is also printed on its own line as it happens. SIGTERM ends
// the run after the current attempt, still printing the summary.

import { createSocket } from "node:dgram";
import { connect } from "node:net";
import { classifySocketError as classify } from "./e2e-errors.ts";
import { scaled } from "./kernel-vm.ts";

export interface ProbeReply {
  pod: string;
  proto: string;
  local: string;
  port: number;
  peer: string;
  peerPort: number;
}

export interface ProbeResult {
  ok: boolean;
  reply?: ProbeReply;
  error?: string;
  /** How long the attempt took. */
  ms: number;
  /** When it started (epoch ms). */
  t: number;
}

interface Args {
  proto: "tcp" | "udp";
  host: string;
  port: number;
  source?: string;
  count: number;
  intervalMs: number;
  timeoutMs: number;
  durationMs: number;
  stream: boolean;
}

const MAX_COUNT = 5000;
// A probe on an emulated CPU (test/support/kernel-vm.ts) gets the same stretch as its waits, so
// one can span a proxy restart in the guest.
const MAX_DURATION_MS = scaled(120_000);

function parseArgs(argv: readonly string[]): Args {
  const a: Partial<Args> = { count: 1, intervalMs: 0, timeoutMs: 2000, durationMs: 60_000, stream: false };
  const num = (v: string | undefined, name: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`bad ${name} ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === "--stream") {
      a.stream = true;
      continue;
    }
    const value = argv[++i];
    switch (flag) {
      case "--proto":
        if (value !== "tcp" && value !== "udp") throw new Error(`bad --proto ${value}`);
        a.proto = value;
        break;
      case "--target": {
        const m = /^(\d+\.\d+\.\d+\.\d+):(\d+)$/.exec(value ?? "");
        if (!m) throw new Error(`bad --target ${value}`);
        a.host = m[1];
        a.port = Number(m[2]);
        break;
      }
      case "--source":
        a.source = value;
        break;
      case "--count":
        a.count = Math.min(MAX_COUNT, Math.max(1, Math.floor(num(value, flag))));
        break;
      case "--interval-ms":
        a.intervalMs = num(value, flag);
        break;
      case "--timeout-ms":
        a.timeoutMs = Math.max(1, num(value, flag));
        break;
      case "--duration-ms":
        a.durationMs = Math.min(MAX_DURATION_MS, num(value, flag));
        break;
      default:
        throw new Error(`unknown argument ${flag}`);
    }
  }
  if (!a.proto || !a.host || !a.port) throw new Error("--proto and --target are required");
  return a as Args;
}

function parseReply(text: string): ProbeReply | undefined {
  try {
    const v = JSON.parse(text.trim().split("\n")[0] ?? "");
    return typeof v?.pod === "string" ? (v as ProbeReply) : undefined;
  } catch {
    return undefined;
  }
}

function tcpAttempt(a: Args): Promise<ProbeResult> {
  const t = Date.now();
  return new Promise((resolve) => {
    let data = "";
    let settled = false;
    const sock = connect({
      host: a.host,
      port: a.port,
      ...(a.source ? { localAddress: a.source } : {}),
    });
    const finish = (r: Omit<ProbeResult, "ms" | "t">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ ...r, ms: Date.now() - t, t });
    };
    const timer = setTimeout(() => finish({ ok: false, error: "timeout" }), a.timeoutMs);
    sock.on("connect", () => sock.write("ping\n"));
    sock.on("data", (d) => {
      data += d;
      if (data.includes("\n")) {
        const reply = parseReply(data);
        finish(reply ? { ok: true, reply } : { ok: false, error: "bad-reply" });
      }
    });
    sock.on("end", () => {
      const reply = parseReply(data);
      finish(reply ? { ok: true, reply } : { ok: false, error: data ? "bad-reply" : "reset" });
    });
    sock.on("error", (err) => finish({ ok: false, error: classify(err) }));
  });
}

function udpAttempt(a: Args): Promise<ProbeResult> {
  const t = Date.now();
  return new Promise((resolve) => {
    let settled = false;
    const sock = createSocket("udp4");
    const finish = (r: Omit<ProbeResult, "ms" | "t">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      try {
        sock.close();
      } catch {
        // already closed
      }
      resolve({ ...r, ms: Date.now() - t, t });
    };
    const timer = setTimeout(() => finish({ ok: false, error: "timeout" }), a.timeoutMs);
    sock.on("error", (err) => finish({ ok: false, error: classify(err) }));
    sock.on("message", (msg) => {
      const reply = parseReply(String(msg));
      finish(reply ? { ok: true, reply } : { ok: false, error: "bad-reply" });
    });
    const send = () =>
      sock.connect(a.port, a.host, () => {
        if (settled) return;
        sock.send("ping\n", (err) => {
          if (err) finish({ ok: false, error: classify(err) });
        });
      });
    if (a.source) sock.bind({ address: a.source, port: 0 }, send);
    else send();
  });
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const start = Date.now();
  const results: ProbeResult[] = [];
  let stopping = false;
  process.on("SIGTERM", () => {
    stopping = true;
  });
  for (let i = 0; i < a.count; i++) {
    if (i > 0 && (stopping || Date.now() - start >= a.durationMs)) break;
    const r = await (a.proto === "tcp" ? tcpAttempt(a) : udpAttempt(a));
    results.push(r);
    if (a.stream) process.stdout.write(`${JSON.stringify(r)}\n`);
    if (a.intervalMs > 0 && i + 1 < a.count) await new Promise((res) => setTimeout(res, a.intervalMs));
  }
  const backends: Record<string, number> = {};
  const errors: Record<string, number> = {};
  for (const r of results) {
    if (r.reply) backends[r.reply.pod] = (backends[r.reply.pod] ?? 0) + 1;
    if (r.error) errors[r.error] = (errors[r.error] ?? 0) + 1;
  }
  const okCount = results.filter((r) => r.ok).length;
  const summary = {
    ok: okCount === results.length,
    attempts: results.length,
    okCount,
    backends,
    errors,
    results,
  };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`e2e-probe: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
});

// A prober for "the servers answer while the proxy works", run inside a namespace:
//   bun test/support/e2e-http-poll.ts --url http://IP:PORT/path [--interval-ms 100] [--max 100000]
// GETs the URL, waits the interval, and again, until killed or --max probes; prints one JSON line
// per probe: {"at":<epoch ms>,"ms":<request to end of answer>,"status":N} or {"at","ms","error"}.
// Each probe's own timeout is 30 s, far beyond what any test accepts, so a stall shows as its
// length rather than as a retry.

import { request } from "node:http";
import { classifySocketError } from "./e2e-errors.ts";

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

function once(url: URL): Promise<{ ms: number; status?: number; error?: string }> {
  const t = performance.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: { status?: number; error?: string }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve({ ms: Math.round(performance.now() - t), ...r });
    };
    const req = request(url, { method: "GET", agent: false }, (res) => {
      res.resume();
      res.on("end", () => finish({ status: res.statusCode ?? 0 }));
      res.on("error", (err) => finish({ error: classifySocketError(err) }));
    });
    const timer = setTimeout(() => finish({ error: "timeout" }), 30_000);
    req.on("error", (err) => finish({ error: classifySocketError(err) }));
    req.end();
  });
}

async function main(): Promise<void> {
  const url = new URL(arg("--url", ""));
  const interval = Number(arg("--interval-ms", "100"));
  const max = Number(arg("--max", "100000"));
  for (let i = 0; i < max; i++) {
    const at = Date.now();
    const r = await once(url);
    process.stdout.write(`${JSON.stringify({ at, ...r })}\n`);
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

if (import.meta.main) {
  main().catch((err) => {
    process.stderr.write(`e2e-http-poll: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  });
}

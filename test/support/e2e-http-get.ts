// One HTTP GET for real-kernel tests, run inside a namespace:
//   bun test/support/e2e-http-get.ts --url http://IP:PORT/path [--timeout-ms MS] [--accept TYPE]
// Prints one JSON line: {"ok":true,"status":200,"headers":{...},"body":"...","ms":N} once the
// whole answer is in, or {"ok":false,"error":"refused"|"timeout"|...,"ms":N} (see e2e-errors.ts).
// Header names are lower case. The timeout bounds the whole exchange, not only the connect.

import { request } from "node:http";
import { classifySocketError } from "./e2e-errors.ts";

export interface HttpGetResult {
  ok: boolean;
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  error?: string;
  ms: number;
}

function parseArgs(argv: readonly string[]): { url: URL; timeoutMs: number; accept?: string } {
  let url: URL | undefined;
  let timeoutMs = 3000;
  let accept: string | undefined;
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i];
    const value = argv[i + 1] ?? "";
    if (flag === "--url") url = new URL(value);
    else if (flag === "--accept") accept = value;
    else if (flag === "--timeout-ms") {
      timeoutMs = Number(value);
      if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new Error(`bad --timeout-ms ${value}`);
    } else throw new Error(`unknown argument ${flag}`);
  }
  if (url?.protocol !== "http:") throw new Error("--url http://... is required");
  return { url, timeoutMs, ...(accept ? { accept } : {}) };
}

function get(url: URL, timeoutMs: number, accept?: string): Promise<HttpGetResult> {
  const t = Date.now();
  return new Promise((resolve) => {
    let settled = false;
    const finish = (r: Omit<HttpGetResult, "ms">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve({ ...r, ms: Date.now() - t });
    };
    const headers = accept ? { Accept: accept } : {};
    const req = request(url, { method: "GET", agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) {
          if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
        }
        finish({
          ok: true,
          status: res.statusCode ?? 0,
          headers,
          body: Buffer.concat(chunks).toString("utf8"),
        });
      });
      res.on("error", (err) => finish({ ok: false, error: classifySocketError(err) }));
    });
    const timer = setTimeout(() => finish({ ok: false, error: "timeout" }), timeoutMs);
    req.on("error", (err) => finish({ ok: false, error: classifySocketError(err) }));
    req.end();
  });
}

async function main(): Promise<void> {
  const { url, timeoutMs, accept } = parseArgs(process.argv.slice(2));
  const r = await get(url, timeoutMs, accept);
  process.stdout.write(`${JSON.stringify(r)}\n`);
  process.exit(0);
}

if (import.meta.main) {
  main().catch((err) => {
    process.stderr.write(`e2e-http-get: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  });
}

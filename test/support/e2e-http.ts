// HTTP as an operator's monitoring sees it, from inside a topology's namespaces: one GET
// (e2e-http-get.ts run in the namespace), a bounded poll until an answer satisfies a test, and a
// reader for the Prometheus text format that /metrics serves.

import { join } from "node:path";
import type { HttpGetResult } from "./e2e-http-get.ts";
import type { Daemon, NsRef, Topology } from "./netns.ts";

export type { HttpGetResult };

const GET = join(import.meta.dir, "e2e-http-get.ts");

/** One GET of `url` from namespace `ns`; never throws for an HTTP or socket failure. */
export async function httpGet(
  topo: Topology,
  ns: NsRef,
  url: string,
  opts: { timeoutMs?: number; accept?: string } = {},
): Promise<HttpGetResult> {
  const timeoutMs = opts.timeoutMs ?? 3000;
  const accept = opts.accept ? ["--accept", opts.accept] : [];
  const r = await topo.run(
    ns,
    [process.execPath, GET, "--url", url, "--timeout-ms", String(timeoutMs), ...accept],
    {
      timeoutMs: timeoutMs + 10_000,
    },
  );
  const last = r.stdout.trim().split("\n").pop() ?? "";
  try {
    return JSON.parse(last) as HttpGetResult;
  } catch {
    throw new Error(`GET ${url} in ${ns} printed no result (exit ${r.code})\n${r.stdout}\n${r.stderr}`);
  }
}

export function describeHttp(r: HttpGetResult): string {
  if (!r.ok) return `${r.error} after ${r.ms} ms`;
  const body = (r.body ?? "").length > 600 ? `${r.body!.slice(0, 600)}...` : r.body;
  return `${r.status} ${JSON.stringify(r.headers)} ${body}`;
}

/**
 * GETs `url` every `intervalMs` until `done` holds (at most timeoutMs, at most 500 tries);
 * returns that answer. Throws with the last answer at the deadline, or at once with the
 * daemon's output when `daemon` exits meanwhile.
 */
export async function pollHttp(
  topo: Topology,
  ns: NsRef,
  url: string,
  done: (r: HttpGetResult) => boolean,
  what: string,
  opts: { timeoutMs?: number; intervalMs?: number; daemon?: Daemon } = {},
): Promise<HttpGetResult> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  let last: HttpGetResult | undefined;
  for (let i = 0; i < 500; i++) {
    const code = opts.daemon?.exitCode();
    if (code !== undefined) {
      throw new Error(
        `kube-proxy-ts exited with ${code} while waiting for ${what}\n--- stderr (tail) ---\n${opts.daemon?.stderr().split("\n").slice(-60).join("\n")}`,
      );
    }
    last = await httpGet(topo, ns, url, { timeoutMs: 2000 });
    if (done(last)) return last;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 250));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what} (GET ${url} in ${ns}); last answer: ${last ? describeHttp(last) : "none"}`,
  );
}

// ---- Prometheus text format -----------------------------------------------------------------

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Scrape {
  /** Metric family name -> its `# TYPE` (counter, gauge, histogram, summary, untyped). */
  readonly types: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
}

const SAMPLE_RE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL_RE = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function parseValue(v: string): number {
  if (v === "+Inf") return Number.POSITIVE_INFINITY;
  if (v === "-Inf") return Number.NEGATIVE_INFINITY;
  return Number(v);
}

/** Parses the text exposition format; throws on a line that is neither comment nor sample. */
export function parseMetrics(text: string): Scrape {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    if (line.startsWith("#")) {
      const m = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (m?.[1] && m[2]) {
        if (types.has(m[1])) throw new Error(`metric ${m[1]} has two TYPE lines`);
        types.set(m[1], m[2]);
      }
      continue;
    }
    const m = SAMPLE_RE.exec(line);
    if (!m?.[1] || m[3] === undefined) throw new Error(`not a metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(LABEL_RE)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1], labels, value: parseValue(m[3]) });
  }
  return { types, samples };
}

/**
 * The sum of every sample named `name` whose labels include `labels` (so an unlabelled query
 * adds up all series, e.g. both families); undefined when there is no such sample.
 */
export function metricValue(
  scrape: Scrape,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  let sum: number | undefined;
  for (const s of scrape.samples) {
    if (s.name !== name) continue;
    if (!Object.entries(labels).every(([k, v]) => s.labels[k] === v)) continue;
    sum = (sum ?? 0) + s.value;
  }
  return sum;
}

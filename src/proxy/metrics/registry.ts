// The registry kube-proxy-ts serves on /metrics (and /metrics/slis). It is prom-client's, with the
// text output that upstream's Go client gives: a family with no samples is left out entirely
// (no HELP/TYPE lines), families come sorted by name, no blank lines between them. It also holds
// scrape-time collectors: families whose samples are read when someone scrapes (nfacct
// counters, /proc/self), the way Go's custom collectors work.

import { type Metric, Registry } from "prom-client";

export type CollectedType = "counter" | "gauge";

export interface Sample {
  readonly value: number;
  readonly labels?: Readonly<Record<string, string>>;
}

export interface CollectorOptions {
  readonly name: string;
  readonly help: string;
  readonly type: CollectedType;
  /** Reads the samples at scrape time; none (or a throw) leaves the family out of the scrape. */
  readonly collect: () => Promise<readonly Sample[]> | readonly Sample[];
  /** Told when collect throws; the scrape itself still succeeds. */
  readonly onError?: (err: unknown) => void;
}

interface FamilyValue {
  value: number;
  labels?: Record<string, string | number>;
  metricName?: string;
}

interface Family {
  name: string;
  help: string;
  type: string;
  values: FamilyValue[];
}

/** A family computed at scrape time, in the shape prom-client's Registry expects of a metric. */
class ScrapeCollector {
  readonly aggregator = "sum";
  constructor(private readonly opts: CollectorOptions) {}

  get name(): string {
    return this.opts.name;
  }
  get help(): string {
    return this.opts.help;
  }
  get type(): string {
    return this.opts.type;
  }

  async get(): Promise<Family> {
    let samples: readonly Sample[] = [];
    try {
      samples = await this.opts.collect();
    } catch (err) {
      this.opts.onError?.(err);
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      values: samples.map((s) => ({ value: s.value, labels: { ...s.labels } })),
    };
  }

  /** Nothing is stored, so there is nothing to reset. */
  reset(): void {}
}

/** Registers a scrape-time family (Go's Collector + NewConstMetric). */
export function registerCollector(registry: Registry, opts: CollectorOptions): void {
  registry.registerMetric(new ScrapeCollector(opts) as unknown as Metric);
}

const escapeHelp = (s: string) => s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
const escapeLabel = (s: string) => s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');

function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Number.POSITIVE_INFINITY) return "+Inf";
  if (v === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(v);
}

// Go prints label pairs sorted by name, a histogram's "le" after them.
const labelOrder = (a: string, b: string) => (a === "le" ? 1 : b === "le" ? -1 : a < b ? -1 : a > b ? 1 : 0);

function formatFamily(f: Family): string {
  const lines = [`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`];
  for (const v of f.values) {
    const labels = Object.entries(v.labels ?? {})
      .sort(([a], [b]) => labelOrder(a, b))
      .map(([k, x]) => `${k}="${escapeLabel(String(x))}"`);
    const head = `${v.metricName ?? f.name}${labels.length > 0 ? `{${labels.join(",")}}` : ""}`;
    lines.push(`${head} ${formatValue(v.value)}`);
  }
  return lines.join("\n");
}

export class KubeRegistry extends Registry {
  override async metrics(): Promise<string> {
    // prom-client's typings describe the stored objects, not their get(); each is a metric.
    const metrics = this.getMetricsAsArray() as unknown as { get(): Promise<Family> }[];
    const families = await Promise.all(metrics.map((m) => m.get()));
    const present = families
      .filter((f) => f.values.length > 0)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return present.map((f) => `${formatFamily(f)}\n`).join("");
  }
}

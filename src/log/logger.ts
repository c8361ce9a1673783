// klog-compatible logging: operators grep kube-proxy logs by klog's header and by -v levels,
// so text output mirrors klog's structured form and JSON mirrors component-base's JSON logger.

export type LogFormat = "text" | "json";
export type LogValue = string | number | boolean | null | undefined | readonly unknown[] | object;
export type KV = Readonly<Record<string, LogValue>>;

export interface LogSink {
  write(line: string): void;
}

export interface Logger {
  info(msg: string, kv?: KV): void;
  warn(msg: string, kv?: KV): void;
  error(msg: string, kv?: KV): void;
  /** Verbosity-gated info: logs only when the configured -v is at least `level`. */
  v(level: number): { info(msg: string, kv?: KV): void; enabled: boolean };
  /** A logger that adds a fixed "logger" name (klog's WithName), shown as the caller. */
  named(name: string): Logger;
}

export interface LoggerOptions {
  format?: LogFormat;
  verbosity?: number;
  /** vmodule-style overrides: logger name -> verbosity ("iptables=4,ipvs=2"). */
  vmodule?: ReadonlyMap<string, number>;
  sink?: LogSink;
  clock?: () => Date;
  pid?: number;
}

type Severity = "I" | "W" | "E";

const stderrSink: LogSink = {
  write(line) {
    process.stderr.write(`${line}\n`);
  },
};

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/** klog header time: MMDD hh:mm:ss.uuuuuu (UTC, microseconds padded from ms). */
export function klogTime(d: Date): string {
  return (
    `${pad(d.getUTCMonth() + 1, 2)}${pad(d.getUTCDate(), 2)} ` +
    `${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.` +
    `${pad(d.getUTCMilliseconds(), 3)}000`
  );
}

function quote(value: LogValue): string {
  if (value instanceof Error) return JSON.stringify(value.message);
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean" || value == null) return String(value);
  return JSON.stringify(value);
}

function jsonValue(value: LogValue): unknown {
  return value instanceof Error ? value.message : value;
}

export function parseVmodule(spec: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const part of spec.split(",")) {
    const [name, level] = part.split("=");
    if (name && level !== undefined && /^\d+$/.test(level)) out.set(name.trim(), Number(level));
  }
  return out;
}

export function createLogger(opts: LoggerOptions = {}, name = ""): Logger {
  const format = opts.format ?? "text";
  const sink = opts.sink ?? stderrSink;
  const clock = opts.clock ?? (() => new Date());
  const pid = opts.pid ?? process.pid;
  const verbosity = (name ? opts.vmodule?.get(name) : undefined) ?? opts.verbosity ?? 0;

  const emit = (sev: Severity, level: number, msg: string, kv: KV | undefined) => {
    const now = clock();
    if (format === "json") {
      const rec: Record<string, unknown> = { ts: now.getTime() / 1000 };
      if (name) rec.logger = name;
      rec.msg = msg;
      if (sev !== "E") rec.v = level;
      for (const [k, val] of Object.entries(kv ?? {}))
        rec[k === "err" && sev === "E" ? "err" : k] = jsonValue(val);
      sink.write(JSON.stringify(rec));
      return;
    }
    const fields = Object.entries(kv ?? {})
      .map(([k, val]) => ` ${k}=${quote(val)}`)
      .join("");
    sink.write(
      `${sev}${klogTime(now)} ${String(pid).padStart(7)} ${name || "kube-proxy"}] ${JSON.stringify(msg)}${fields}`,
    );
  };

  return {
    info: (msg, kv) => emit("I", 0, msg, kv),
    warn: (msg, kv) => emit("W", 0, msg, kv),
    error: (msg, kv) => emit("E", 0, msg, kv),
    v(level) {
      const enabled = verbosity >= level;
      return { enabled, info: (msg, kv) => (enabled ? emit("I", level, msg, kv) : undefined) };
    },
    named: (child) => createLogger(opts, name ? `${name}.${child}` : child),
  };
}

/** A logger that drops everything: the default for library code under test. */
export const nullLogger: Logger = createLogger({ sink: { write() {} } });

/** Collects lines in memory; tests assert on what an operator would read. */
export function memoryLogger(opts: Omit<LoggerOptions, "sink"> = {}): Logger & { lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger({ ...opts, sink: { write: (l) => lines.push(l) } });
  return Object.assign(logger, { lines });
}

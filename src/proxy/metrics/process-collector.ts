// The process_* families upstream's /metrics carries from the Prometheus Go client's process
// collector (client_golang v1.19, which kube-proxy v1.31 uses): CPU time, memory, file
// descriptors, start time. Read from /proc at scrape time like that collector does; a file that
// cannot be read leaves its families out. prom-client's collectDefaultMetrics is not used: it
// adds nodejs_* families upstream does not have.

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Registry } from "prom-client";
import { type CollectedType, registerCollector, type Sample } from "./registry.ts";

/** procfs assumes USER_HZ = 100, as the kernel exports it on every architecture. */
const USER_HZ = 100;
/** What Go's procfs reports for "unlimited": the largest uint64 (as a float64, 2^64). */
const UNLIMITED = 2 ** 64;

export interface ProcessStat {
  /** utime + stime, in clock ticks. */
  readonly cpuTicks: number;
  /** Start time after boot, in clock ticks. */
  readonly startTicks: number;
  readonly vsizeBytes: number;
}

/** Parses /proc/<pid>/stat; fields are counted after the ")" that ends the command name. */
export function parseProcStat(text: string): ProcessStat {
  const rest = text
    .slice(text.lastIndexOf(")") + 2)
    .trim()
    .split(/\s+/);
  // rest[0] is field 3 (state): utime is field 14, stime 15, starttime 22, vsize 23.
  const field = (n: number) => {
    const v = Number(rest[n - 3]);
    if (!Number.isFinite(v)) throw new Error(`/proc stat: field ${n} is not a number`);
    return v;
  };
  return { cpuTicks: field(14) + field(15), startTicks: field(22), vsizeBytes: field(23) };
}

/** "btime" of /proc/stat: boot time in seconds since the epoch. */
export function parseBootTime(text: string): number {
  const m = /^btime\s+(\d+)$/m.exec(text);
  if (!m) throw new Error("/proc/stat has no btime line");
  return Number(m[1]);
}

/** VmRSS of /proc/<pid>/status, in bytes (the same counter as stat's rss, times the page size). */
export function parseRssBytes(status: string): number {
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (!m) throw new Error("/proc status has no VmRSS line");
  return Number(m[1]) * 1024;
}

/** Soft limits from /proc/<pid>/limits by name ("Max open files"), unlimited as Go reports it. */
export function parseSoftLimit(limits: string, name: string): number {
  const line = limits.split("\n").find((l) => l.startsWith(name));
  if (!line) throw new Error(`/proc limits has no "${name}" line`);
  const soft = line.slice(name.length).trim().split(/\s+/)[0];
  if (soft === "unlimited") return UNLIMITED;
  const v = Number(soft);
  if (!Number.isFinite(v)) throw new Error(`/proc limits: "${name}" is ${soft}`);
  return v;
}

/** Linux 6.2+ gives the count as the fd directory's size (procfs's fast path); else list it. */
function openFds(fdDir: string): number {
  const size = statSync(fdDir).size;
  return size > 0 ? size : readdirSync(fdDir).length;
}

export interface ProcessCollectorOptions {
  /** Where /proc is (tests point it elsewhere). */
  readonly procRoot?: string;
  /** Which process: "self" by default. */
  readonly pid?: string;
}

export function registerProcessCollector(registry: Registry, opts: ProcessCollectorOptions = {}): void {
  const proc = opts.procRoot ?? "/proc";
  const dir = join(proc, opts.pid ?? "self");
  const read = (name: string) => readFileSync(join(dir, name), "utf8");
  const stat = () => parseProcStat(read("stat"));
  const family = (name: string, help: string, type: CollectedType, value: () => number) =>
    registerCollector(registry, {
      name,
      help,
      type,
      collect: (): Sample[] => [{ value: value() }],
    });

  family("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter", () => {
    return stat().cpuTicks / USER_HZ;
  });
  family("process_open_fds", "Number of open file descriptors.", "gauge", () => openFds(join(dir, "fd")));
  family("process_max_fds", "Maximum number of open file descriptors.", "gauge", () =>
    parseSoftLimit(read("limits"), "Max open files"),
  );
  family("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", () => stat().vsizeBytes);
  family(
    "process_virtual_memory_max_bytes",
    "Maximum amount of virtual memory available in bytes.",
    "gauge",
    () => parseSoftLimit(read("limits"), "Max address space"),
  );
  family("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", () =>
    parseRssBytes(read("status")),
  );
  family(
    "process_start_time_seconds",
    "Start time of the process since unix epoch in seconds.",
    "gauge",
    () => parseBootTime(readFileSync(join(proc, "stat"), "utf8")) + stat().startTicks / USER_HZ,
  );
}

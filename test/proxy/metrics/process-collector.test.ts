import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildInfoLabels, registerBuildInfo } from "../../../src/proxy/metrics/build-info.ts";
import {
  parseProcStat,
  parseSoftLimit,
  registerProcessCollector,
} from "../../../src/proxy/metrics/process-collector.ts";
import { KubeRegistry } from "../../../src/proxy/metrics/registry.ts";
import { tempDir } from "../../support/binary.ts";

// A process whose command name holds spaces and parentheses, as /proc shows it.
const STAT =
  "4242 (kube proxy (ts)) S 1 4242 4242 0 -1 4194560 5000 0 0 0 250 130 0 0 20 0 9 0 " +
  "12345 1048576000 20000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
const LIMITS = [
  "Limit                     Soft Limit           Hard Limit           Units     ",
  "Max cpu time              unlimited            unlimited            seconds   ",
  "Max open files            1024                 1048576              files     ",
  "Max address space         unlimited            unlimited            bytes     ",
  "",
].join("\n");

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function fakeProc(): string {
  const root = tempDir("kpts-proc-");
  dirs.push(root);
  const self = join(root, "self");
  mkdirSync(join(self, "fd"), { recursive: true });
  for (const fd of ["0", "1", "2", "7"]) writeFileSync(join(self, "fd", fd), "");
  writeFileSync(join(self, "stat"), STAT);
  writeFileSync(join(self, "status"), "Name:\tkube-proxy-ts\nVmRSS:\t   81920 kB\nThreads:\t9\n");
  writeFileSync(join(self, "limits"), LIMITS);
  writeFileSync(join(root, "stat"), "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n");
  return root;
}

describe("process collector", () => {
  test("parses stat after the last ')' and limits' soft column", () => {
    expect(parseProcStat(STAT)).toEqual({ cpuTicks: 380, startTicks: 12345, vsizeBytes: 1048576000 });
    expect(parseSoftLimit(LIMITS, "Max open files")).toBe(1024);
    expect(parseSoftLimit(LIMITS, "Max address space")).toBe(2 ** 64);
  });

  test("families and values as the Go client computes them (USER_HZ 100, btime + start ticks)", async () => {
    const registry = new KubeRegistry();
    registerProcessCollector(registry, { procRoot: fakeProc() });
    const text = await registry.metrics();
    expect(text).toContain("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3.8\n");
    expect(text).toContain("\nprocess_start_time_seconds 1700000123.45\n");
    expect(text).toContain("\nprocess_virtual_memory_bytes 1048576000\n");
    expect(text).toContain("\nprocess_resident_memory_bytes 83886080\n");
    expect(text).toContain("\nprocess_max_fds 1024\n");
    expect(text).toContain("\nprocess_virtual_memory_max_bytes 18446744073709552000\n");
    expect(text).toContain("# HELP process_open_fds Number of open file descriptors.\n");
    expect(text).toMatch(/\nprocess_open_fds \d+\n/);
  });

  test("an unreadable /proc leaves the families out instead of failing the scrape", async () => {
    const registry = new KubeRegistry();
    registerProcessCollector(registry, { procRoot: join(fakeProc(), "nowhere") });
    expect(await registry.metrics()).toBe("");
  });

  test("this process: live values", async () => {
    const registry = new KubeRegistry();
    registerProcessCollector(registry);
    const text = await registry.metrics();
    const value = (n: string) => Number(new RegExp(`\\n${n} (\\S+)\\n`).exec(`\n${text}`)?.[1]);
    expect(value("process_open_fds")).toBeGreaterThan(2);
    expect(value("process_resident_memory_bytes")).toBeGreaterThan(1024 * 1024);
    expect(
      Math.abs(value("process_start_time_seconds") - (Date.now() - performance.now()) / 1000),
    ).toBeLessThan(120);
  });
});

describe("kubernetes_build_info", () => {
  const v = {
    version: "v0.4.2",
    gitCommit: "0123456789ab-dirty",
    buildDate: "2024-08-13T07:28:49Z",
    runtime: "bun 1.1.30",
    upstreamCompat: "v1.31",
  };

  test("labels describe this build; go_version/compiler name the runtime; Go-style platform", () => {
    expect(buildInfoLabels(v, "linux", "x64")).toEqual({
      major: "0",
      minor: "4",
      git_version: "v0.4.2",
      git_commit: "0123456789ab",
      git_tree_state: "dirty",
      build_date: "2024-08-13T07:28:49Z",
      go_version: "bun 1.1.30",
      compiler: "bun",
      platform: "linux/amd64",
    });
    const source = { ...v, gitCommit: "unknown", buildDate: "unknown" };
    expect(buildInfoLabels(source, "linux", "arm64")).toMatchObject({
      git_commit: "",
      git_tree_state: "",
      build_date: "",
      platform: "linux/arm64",
    });
  });

  test("one series with value 1", async () => {
    const registry = new KubeRegistry();
    registerBuildInfo(registry, v);
    const text = await registry.metrics();
    expect(text).toContain("# TYPE kubernetes_build_info gauge\n");
    expect(text).toMatch(/\nkubernetes_build_info\{build_date="2024-08-13T07:28:49Z",[^}]*\} 1\n$/);
  });
});

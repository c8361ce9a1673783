import { describe, expect, test } from "bun:test";
import { klogTime, memoryLogger, parseVmodule } from "../../src/log/logger.ts";

const fixed = () => new Date(Date.UTC(2026, 10, 22, 11, 21, 23, 123));

describe("klog text format", () => {
  test("header carries severity, MMDD time, pid and logger name; kv pairs are quoted", () => {
    const log = memoryLogger({ clock: fixed, pid: 42 });
    log.named("iptables").info("Syncing rules", { services: 3, mode: "iptables" });
    expect(log.lines).toEqual([
      `I1122 11:21:23.123000      42 iptables] "Syncing rules" services=3 mode="iptables"`,
    ]);
  });

  test("warn and error use W and E", () => {
    const log = memoryLogger({ clock: fixed, pid: 1 });
    log.warn("w");
    log.error("e", { err: new Error("boom") });
    expect(log.lines[0]?.startsWith("W1122")).toBe(true);
    expect(log.lines[1]).toContain(`E1122`);
    expect(log.lines[1]).toContain(`err="boom"`);
  });

  test("klogTime pads every field", () => {
    expect(klogTime(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)))).toBe("0102 03:04:05.006000");
  });
});

describe("verbosity", () => {
  test("-v gates v(n).info", () => {
    const log = memoryLogger({ verbosity: 2 });
    log.v(2).info("shown");
    log.v(3).info("hidden");
    expect(log.lines.length).toBe(1);
    expect(log.v(3).enabled).toBe(false);
  });

  test("vmodule raises one named logger only", () => {
    const log = memoryLogger({ verbosity: 0, vmodule: parseVmodule("ipvs=4,bad,x=y") });
    log.named("ipvs").v(4).info("detail");
    log.named("iptables").v(1).info("hidden");
    expect(log.lines.length).toBe(1);
    expect(parseVmodule("ipvs=4,bad,x=y")).toEqual(new Map([["ipvs", 4]]));
  });
});

describe("json format", () => {
  test("one JSON object per line with ts, logger, msg, v and fields", () => {
    const log = memoryLogger({ format: "json", clock: fixed });
    log.named("main").v(0).info("Starting", { version: "v0.1.0" });
    const rec = JSON.parse(log.lines[0] ?? "{}");
    expect(rec).toEqual({
      ts: fixed().getTime() / 1000,
      logger: "main",
      msg: "Starting",
      v: 0,
      version: "v0.1.0",
    });
  });
});

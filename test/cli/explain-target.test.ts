// `explain IP:port[/proto]` target and --from parsing: good forms, errors that name the value,
// and (fast-check) that any string either parses into a valid target or is refused by name.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { parseExplainSource, parseExplainTarget } from "../../src/cli/explain-target.ts";
import { resolveCommandLine } from "../../src/cli/index.ts";

const noFile = () => {
  throw new Error("no config file in these tests");
};

describe("explain target", () => {
  test("IPv4 and bracketed IPv6, protocol defaulting to tcp", () => {
    expect(parseExplainTarget("192.0.2.10:80")).toEqual({
      ok: true,
      value: { destination: "192.0.2.10", port: 80, protocol: "tcp" },
    });
    expect(parseExplainTarget("198.51.100.53:53/udp")).toEqual({
      ok: true,
      value: { destination: "198.51.100.53", port: 53, protocol: "udp" },
    });
    expect(parseExplainTarget("[2001:db8::1]:443/SCTP")).toEqual({
      ok: true,
      value: { destination: "2001:db8::1", port: 443, protocol: "sctp" },
    });
  });

  test.each([
    ["192.0.2.10", "no port"],
    ["192.0.2.10:0", 'port "0"'],
    ["192.0.2.10:65536", 'port "65536"'],
    ["192.0.2.10:http", 'port "http"'],
    ["192.0.2.10:80/icmp", 'unknown protocol "icmp"'],
    ["2001:db8::1:80", "needs brackets"],
    ["[192.0.2.10]:80", "not an IPv6 address"],
    ["[2001:db8::1]80", "expected IP:port"],
    ["node-a:80", '"node-a" is not an IP address'],
    ["", "no port"],
  ])("%j is refused: %s", (text, why) => {
    const r = parseExplainTarget(text);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error).toContain(JSON.stringify(text));
      expect(r.error).toContain(why);
    }
  });

  test("any string parses to a valid target or is refused naming it", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[0-9a-f:.[\]/]{0,24}$/)), (text) => {
        const r = parseExplainTarget(text);
        if (!r.ok) return r.error.includes(JSON.stringify(text));
        const v = r.value;
        return (
          Number.isInteger(v.port) &&
          v.port >= 1 &&
          v.port <= 65535 &&
          ["tcp", "udp", "sctp"].includes(v.protocol) &&
          parseExplainSource(v.destination).ok
        );
      }),
    );
  });

  test("formatted targets read back as they were written", () => {
    const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join("."));
    fc.assert(
      fc.property(
        v4,
        fc.integer({ min: 1, max: 65535 }),
        fc.constantFrom("tcp", "udp", "sctp"),
        (ip, port, proto) => {
          const r = parseExplainTarget(`${ip}:${port}/${proto}`);
          return r.ok && r.value.destination === ip && r.value.port === port && r.value.protocol === proto;
        },
      ),
    );
  });
});

describe("explain on the command line", () => {
  test("explain TARGET --from IP is a run with an explain request", () => {
    const cl = resolveCommandLine(
      ["explain", "198.51.100.10:80", "--from", "203.0.113.5", "--output=json"],
      noFile,
    );
    expect(cl.kind).toBe("run");
    if (cl.kind !== "run") return;
    expect(cl.explain).toEqual({
      destination: "198.51.100.10",
      port: 80,
      protocol: "tcp",
      source: "203.0.113.5",
    });
    expect(cl.run.output).toBe("json");
  });

  test("flags may come before the word", () => {
    const cl = resolveCommandLine(["--proxy-mode=nftables", "explain", "198.51.100.10:53/udp"], noFile);
    expect(cl.kind === "run" && cl.explain?.protocol).toBe("udp");
  });

  test.each([
    [["explain"], "explain takes one target"],
    [["explain", "198.51.100.10:80", "extra"], "explain takes one target"],
    [["explain", "198.51.100.10"], '"198.51.100.10": no port'],
    [["explain", "198.51.100.10:80", "--from", "nowhere"], '"nowhere" is not an IP address'],
    [["explain", "[2001:db8::1]:80", "--from", "192.0.2.1"], "not of the target's IP family"],
    [["--from", "192.0.2.1"], "only applies to `explain`"],
    [["run"], "no positional arguments but `explain"],
    [["--dry-run", "--output=dot"], "dot only applies to `explain`"],
    [["explain", "198.51.100.10:80", "--state", "a.yaml", "--state", "b.yaml"], "give --state once"],
  ])("%j is an error: %s", (argv, why) => {
    const cl = resolveCommandLine(argv, noFile);
    expect(cl.kind).toBe("error");
    if (cl.kind === "error") expect(JSON.stringify(cl.errors)).toContain(JSON.stringify(why).slice(1, -1));
  });
});

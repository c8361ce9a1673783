import { describe, expect, test } from "bun:test";
import {
  type IpvsadmCommand,
  parseIpvsadmArgs,
  parseSchedFlags,
  restoreLineWords,
  SVC_F_PERSISTENT,
  SVC_F_SCHED1,
  SVC_F_SCHED2,
  schedFlagNames,
} from "../../../src/host/ipvs/syntax.ts";

const parse = (line: string) => parseIpvsadmArgs(restoreLineWords(line));
const command = (line: string): IpvsadmCommand => {
  const res = parse(line);
  if (!res.ok) throw new Error(`${line}: ${res.message}`);
  return res.command;
};

describe("parseIpvsadmArgs: commands ipvsadm accepts", () => {
  test("add-service with persistence and scheduler flags", () => {
    expect(command("-A -t 10.96.0.10:53 -s sh -p 10800 -b sh-fallback,sh-port")).toEqual({
      kind: "add-service",
      service: {
        key: { address: "10.96.0.10", port: 53, protocol: "TCP" },
        scheduler: "sh",
        flags: SVC_F_PERSISTENT | SVC_F_SCHED1 | SVC_F_SCHED2,
        timeout: 10800,
      },
    });
  });

  test("udp, sctp and bracketed IPv6 services; scheduler defaults to wlc", () => {
    expect(command("-E -u [FD00:10:96::A]:53")).toMatchObject({
      kind: "edit-service",
      service: { key: { address: "fd00:10:96::a", port: 53, protocol: "UDP" }, scheduler: "wlc", flags: 0 },
    });
    expect(command("-D --sctp-service 10.0.0.1:3868")).toEqual({
      kind: "delete-service",
      key: { address: "10.0.0.1", port: 3868, protocol: "SCTP" },
    });
  });

  test("-p without a value means 360 seconds (what ipvsadm 1.31 sets)", () => {
    expect(command("-A -t 10.0.0.1:80 -s rr -p")).toMatchObject({ service: { timeout: 360 } });
  });

  test("real servers: masquerading keeps the real port, direct routing takes the service's", () => {
    expect(command("-a -t 10.0.0.1:80 -r 10.244.1.5:8080 -m -w 3")).toEqual({
      kind: "add-server",
      key: { address: "10.0.0.1", port: 80, protocol: "TCP" },
      dest: {
        address: "10.244.1.5",
        port: 8080,
        weight: 3,
        forward: "masq",
        upperThreshold: 0,
        lowerThreshold: 0,
      },
    });
    expect(command("-a -t 10.0.0.1:80 -r 10.244.1.5:8080")).toMatchObject({
      dest: { port: 80, weight: 1, forward: "route" },
    });
    expect(command("-d -t 10.0.0.1:80 -r 10.244.1.5:8080")).toMatchObject({ dest: { port: 8080 } });
    expect(command("-e -t 10.0.0.1:80 -r 10.244.1.5")).toMatchObject({ dest: { port: 80 } });
  });

  test("bundled short options, long options with =, a leading ipvsadm word", () => {
    expect(command("-Ln --exact")).toEqual({
      kind: "list",
      numeric: true,
      what: "services",
      format: "plain",
      nosort: false,
    });
    expect(command("ipvsadm --add-service --tcp-service=10.0.0.1:80 --scheduler=rr")).toMatchObject({
      kind: "add-service",
    });
    expect(command("-Sn")).toEqual({ kind: "save", numeric: true });
    expect(command("--set 900 120 300")).toEqual({ kind: "set", tcp: 900, tcpFin: 120, udp: 300 });
    expect(command("-L --timeout")).toMatchObject({ kind: "list", what: "timeout" });
  });
});

describe("parseIpvsadmArgs: what ipvsadm refuses, with its messages", () => {
  const table: [string, string, number][] = [
    ["-A -t 10.0.0.1:80 -s rr -b bogus", "invalid scheduler flag `bogus'", 2],
    ["-A -t 10.0.0.1:80 -s rr -b sh-port", "incompatible scheduler flag `sh-port'", 2],
    ["-A -t 10.0.0.1:99999 -s rr", "illegal virtual server address[:port] specified", 2],
    ["-A -t nonsense:80 -s rr", "illegal virtual server address[:port] specified", 2],
    ["-A -t 10.0.0.1:80 -p abc", "invalid timeout value `abc' specified", 2],
    ["-A -t 10.0.0.1:80 -p 2678401", "invalid timeout value `2678401' specified", 2],
    ["-A -t 10.0.0.1 -s rr", "Zero port specified for non-persistent service", 2],
    ["-A -s rr", "You need to supply the 'service-address' option for the 'add-service' command", 2],
    ["-A -t 10.0.0.1:80 -r 10.0.0.2:80", "Illegal 'real-server' option with the 'add-service' command", 2],
    ["-a -t 10.0.0.1:80 -m", "You need to supply the 'real-server' option for the 'add-server' command", 2],
    [
      "-d -t 10.0.0.1:80 -r 10.0.0.2:80 -m",
      "Illegal 'forwarding-method' option with the 'delete-server' command",
      2,
    ],
    // The weight is an int: 70000 is fine, 2^31 is not.
    ["-a -t 10.0.0.1:80 -r 10.0.0.2:80 -w 2147483648", "illegal weight specified", 2],
    ["-a -t 10.0.0.1:80 -r 10.0.0.2:80 -w -1", "illegal weight specified", 2],
    [
      "-a -t 10.0.0.1:80 -r [fd00::1]:80 -m",
      "Different address family is allowed only for tunneling servers",
      2,
    ],
    ["-A -t 10.0.0.1:80 -t 10.0.0.2:80", "multiple 'service-address' options specified", 2],
    // The first command option is the command; a later one is an invalid option, named as written.
    ["-A -D -t 10.0.0.1:80", "invalid option `-D'", 2],
    ["-A -t 10.0.0.1:80 -Ln", "invalid option `-Ln'", 2],
    ["-L -t 10.0.0.1:80 --stats --timeout", "options conflicts in the list command", 2],
    ["-A -t [fd00::1]:80 -p -M 255.255.255.0", "illegal ipv6 netmask specified", 2],
    ["--set 900 120", "--set option requires 3 timeout values", 2],
    ["-C extra", "unexpected argument extra", 2],
    ["-n -L", "Try `ipvsadm -h' or 'ipvsadm --help' for more information.", 255],
    ["-A -t 10.0.0.1:80 --bogus", "--bogus: unknown option", 255],
  ];
  for (const [line, message, exit] of table) {
    test(line, () => {
      const res = parse(line);
      expect(res.ok).toBe(false);
      if (!res.ok) expect({ message: res.message, exit: res.exit }).toEqual({ message, exit });
    });
  }

  test("popt errors do not end a --restore, fail() and the help exit do", () => {
    const popt = parse("-A -t 10.0.0.1:80 --bogus");
    const failed = parse("-A -t 10.0.0.1:80 -b bogus");
    expect(!popt.ok && popt.fatal).toBe(false);
    expect(!failed.ok && failed.fatal).toBe(true);
  });
});

describe("scheduler flags", () => {
  test("names per scheduler", () => {
    expect(schedFlagNames("sh", SVC_F_SCHED1 | SVC_F_SCHED2)).toEqual(["sh-fallback", "sh-port"]);
    expect(schedFlagNames("mh", SVC_F_SCHED2)).toEqual(["mh-port"]);
    expect(schedFlagNames("rr", SVC_F_SCHED2)).toEqual(["flag-2"]);
    expect(parseSchedFlags("mh", "mh-fallback,mh-port")).toBe(SVC_F_SCHED1 | SVC_F_SCHED2);
  });

  test("restore words drop the ipvsadm program name", () => {
    expect(restoreLineWords("ipvsadm -A  -t\t10.0.0.1:80 -s rr\r")).toEqual([
      "-A",
      "-t",
      "10.0.0.1:80",
      "-s",
      "rr",
    ]);
  });
});

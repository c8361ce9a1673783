// The built binary's node-level decisions, seen through `--dry-run --output=json`: the
// route_localnet sysctl and its KUBE-FIREWALL guard, the kernel's nf_conntrack_tcp_be_liberal,
// a HostState iptablesVersion in its bare form, and a host without the proxy's tools.

import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureBinary, runBinary, tempDir } from "../support/binary.ts";

interface Command {
  argv: string[];
  stdin?: string;
}
interface Report {
  mode: string;
  checks: { name: string; ok: boolean; detail: string }[];
  commands: Command[];
  ipvs?: { virtualServers: { address: string; port: number; protocol: string }[] };
}

const ROUTE_LOCALNET = ["sysctl", "-w", "net.ipv4.conf.all.route_localnet=1"];
const GUARD = `-A KUBE-FIREWALL -m comment --comment "block incoming localnet connections" -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP`;

/** examples/cluster.yaml plus a HostState document with these extra lines. */
function stateFile(hostState: string): string {
  const file = join(tempDir(), "state.yaml");
  writeFileSync(
    file,
    `${readFileSync("examples/cluster.yaml", "utf8")}---
apiVersion: kube-proxy-ts/v1
kind: HostState
${hostState}
`,
  );
  return file;
}

function dryRun(args: string[]): { code: number; report: Report; stderr: string } {
  const r = runBinary(["--dry-run", "--output=json", ...args]);
  if (r.stdout.trim() === "") throw new Error(`no report (exit ${r.code}): ${r.stderr}`);
  return { code: r.code, report: JSON.parse(r.stdout) as Report, stderr: r.stderr };
}

/** The IPv4 iptables-restore input of the plan (the first restore that is not ip6tables'). */
function ipv4Restore(report: Report): string {
  const restore = report.commands.find((c) => /^iptables(-nft|-legacy)?-restore$/.test(c.argv[0] ?? ""));
  if (!restore?.stdin) throw new Error("no IPv4 iptables-restore in the plan");
  return restore.stdin;
}

const sysctlCommands = (report: Report) => report.commands.filter((c) => c.argv[0] === "sysctl");

describe("route_localnet and its guard (CVE-2020-8558) decide together", () => {
  // route_localnet stated as 0, so "=1" shows up as a planned write whatever this host has.
  const state = stateFile(`sysctls:\n  net/ipv4/conf/all/route_localnet: 0`);

  test("nodePortAddresses without loopback: route_localnet is not written and no guard is needed", () => {
    const { code, report, stderr } = dryRun(["--state", state, "--nodeport-addresses=192.0.2.0/24"]);
    expect(code).toBe(0);
    expect(sysctlCommands(report).map((c) => c.argv)).not.toContainEqual(ROUTE_LOCALNET);
    expect(ipv4Restore(report)).not.toContain("block incoming localnet connections");
    expect(stderr).toContain("Localhost NodePorts are off");
    expect(stderr).toContain("contain no loopback address");
  });

  test('"primary" nodePortAddresses resolve to the node IP: route_localnet stays off', () => {
    const { report } = dryRun(["--state", state, "--nodeport-addresses=primary"]);
    expect(sysctlCommands(report).map((c) => c.argv)).not.toContainEqual(ROUTE_LOCALNET);
  });

  test.each([
    ["default (every address)", [] as string[]],
    ["127.0.0.0/8 included", ["--nodeport-addresses=127.0.0.0/8,192.0.2.0/24"]],
  ])("%s: route_localnet=1 AND the guard rule in the filter table", (_name, flags) => {
    const { code, report } = dryRun(["--state", state, ...flags]);
    expect(code).toBe(0);
    expect(sysctlCommands(report).map((c) => c.argv)).toContainEqual(ROUTE_LOCALNET);
    const restore = ipv4Restore(report);
    const filter = restore.slice(restore.indexOf("*filter"), restore.indexOf("COMMIT"));
    expect(filter).toContain(":KUBE-FIREWALL - [0:0]");
    expect(filter).toContain(GUARD);
  });

  test("--iptables-localhost-nodeports=false: neither, and the log says why", () => {
    const { report, stderr } = dryRun(["--state", state, "--iptables-localhost-nodeports=false"]);
    expect(sysctlCommands(report).map((c) => c.argv)).not.toContainEqual(ROUTE_LOCALNET);
    expect(ipv4Restore(report)).not.toContain("block incoming localnet connections");
    expect(stderr).toContain("--iptables-localhost-nodeports) is false");
  });
});

describe("nf_conntrack_tcp_be_liberal is read from the kernel", () => {
  const INVALID_DROP = /-A KUBE-FORWARD -m conntrack --ctstate INVALID .*-j DROP/;

  test("the host has it set: no INVALID drop rule, and the log says so", () => {
    const state = stateFile(`sysctls:\n  net/netfilter/nf_conntrack_tcp_be_liberal: 1`);
    const { code, report, stderr } = dryRun(["--state", state]);
    expect(code).toBe(0);
    expect(ipv4Restore(report)).not.toMatch(INVALID_DROP);
    expect(stderr).toContain(
      "nf_conntrack_tcp_be_liberal set, not installing DROP rules for INVALID packets",
    );
  });

  test("the host has it off: the INVALID drop rule is there", () => {
    const state = stateFile(`sysctls:\n  net.netfilter.nf_conntrack_tcp_be_liberal: "0"`);
    const { report } = dryRun(["--state", state]);
    expect(ipv4Restore(report)).toMatch(INVALID_DROP);
  });

  test("--conntrack-tcp-be-liberal: the planned write is what the proxier then reads", () => {
    const state = stateFile(`sysctls:\n  net/netfilter/nf_conntrack_tcp_be_liberal: 0`);
    const { report } = dryRun(["--state", state, "--conntrack-tcp-be-liberal"]);
    expect(report.commands.map((c) => c.argv)).toContainEqual([
      "sysctl",
      "-w",
      "net.netfilter.nf_conntrack_tcp_be_liberal=1",
    ]);
    expect(ipv4Restore(report)).not.toMatch(INVALID_DROP);
  });
});

describe("HostState iptablesVersion", () => {
  test.each(["1.8.9", "v1.8.9", "iptables v1.8.9 (nf_tables)"])("%p keeps --random-fully", (version) => {
    const state = stateFile(`iptablesVersion: "${version}"`);
    const { code, report } = dryRun(["--state", state]);
    expect(code).toBe(0);
    expect(ipv4Restore(report)).toContain("-j MASQUERADE --random-fully");
  });

  test("an unusable value is refused, naming the field and the value", () => {
    const r = runBinary(["--dry-run", "--output=json", "--state", stateFile(`iptablesVersion: "one.eight"`)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("iptablesVersion");
    expect(r.stderr).toContain("not an iptables version");
  });
});

describe("a host without the proxy's tools still gets the full plan", () => {
  // PATH names an empty directory: iptables, ipset, ipvsadm, ip, modprobe are all "not installed".
  function withoutTools(args: string[]): { code: number; report: Report } {
    const emptyPath = join(tempDir(), "bin");
    mkdirSync(emptyPath);
    const r = spawnSync(ensureBinary(), ["--dry-run", "--output=json", ...args], {
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, PATH: emptyPath },
    });
    if (!r.stdout?.trim()) throw new Error(`no report (exit ${r.status}): ${r.stderr}`);
    return { code: r.status ?? -1, report: JSON.parse(r.stdout) as Report };
  }

  test("--mode=ipvs (embedded example): exit 3, a failed check naming the tools, every virtual server", () => {
    const { code, report } = withoutTools(["--mode=ipvs"]);
    expect(code).toBe(3);
    const tools = report.checks.find((c) => c.name === "host tools");
    expect(tools?.ok).toBe(false);
    expect(tools?.detail).toContain("ipset");
    expect(tools?.detail).toMatch(/ip6?tables/);
    const keys = report.ipvs?.virtualServers.map((v) => `${v.protocol} ${v.address}:${v.port}`) ?? [];
    expect(keys).toEqual(
      expect.arrayContaining([
        "TCP 198.51.100.10:80",
        "UDP 198.51.100.53:53",
        "TCP 192.0.2.100:443",
        "TCP 192.0.2.200:443",
      ]),
    );
    const tools0 = report.commands.map((c) => c.argv[0]);
    expect(tools0).toEqual(expect.arrayContaining(["ipset", "ipvsadm", "iptables-nft-restore"]));
  });

  test("--mode=ipvs with the node's addresses stated: the 11 virtual servers, NodePorts included", () => {
    const state = stateFile(`interfaces:\n  - { name: eth0, addresses: [192.0.2.10/24] }`);
    const { code, report } = withoutTools(["--mode=ipvs", "--state", state]);
    expect(code).toBe(3);
    const keys = report.ipvs?.virtualServers.map((v) => `${v.protocol} ${v.address}:${v.port}`) ?? [];
    expect(keys).toHaveLength(11);
    expect(keys).toEqual(expect.arrayContaining(["TCP 192.0.2.10:30080", "TCP 192.0.2.10:31443"]));
    const restore = report.commands.find((c) => c.argv[0] === "iptables-nft-restore");
    expect(restore?.stdin).toContain("KUBE-SERVICES");
    expect(report.commands.some((c) => c.argv[0] === "ipset" && c.argv[1] === "restore")).toBe(true);
  });

  test("iptables mode: the full restore for both families, with the failed check", () => {
    const { code, report } = withoutTools([]);
    expect(code).toBe(3);
    expect(report.checks.find((c) => c.name === "host tools")?.ok).toBe(false);
    expect(ipv4Restore(report)).toContain("KUBE-SVC-");
    expect(report.commands.some((c) => c.argv[0] === "ip6tables-nft-restore")).toBe(true);
  });
});

describe("nf_conntrack hashsize follows nf_conntrack_max", () => {
  const HASHSIZE = "/sys/module/nf_conntrack/parameters/hashsize";
  // The same facts the binary looks at, so the test states what this host should get.
  const current = existsSync(HASHSIZE) ? Number(readFileSync(HASHSIZE, "utf8").trim()) : undefined;
  const link = (p: string) => {
    try {
      return readlinkSync(p);
    } catch {
      return undefined;
    }
  };
  const init = link("/proc/1/ns/net");
  const otherNetns = init !== undefined && init !== link("/proc/self/ns/net");
  const sysfsRw = readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .some((l) => l.split(" ")[2] === "sysfs" && l.split(" ")[3]?.startsWith("rw"));

  test(`a raised max plans hashsize = max/4 (hashsize here: ${current}, other netns: ${otherNetns})`, () => {
    const max = 2 ** 28;
    const { code, report } = dryRun([
      "--state",
      "examples/cluster.yaml",
      "--conntrack-max-per-core=1",
      `--conntrack-min=${max}`,
    ]);
    expect(code).toBe(0);
    const write = ["sh", "-c", `echo ${max / 4} > ${HASHSIZE}`];
    const argvs = report.commands.map((c) => c.argv);
    if (current !== undefined && current < max / 4 && !otherNetns && sysfsRw) {
      expect(argvs).toContainEqual(write);
      // After the max it follows.
      const maxAt = argvs.findIndex((a) => a.join(" ") === `sysctl -w net.netfilter.nf_conntrack_max=${max}`);
      expect(maxAt).toBeGreaterThanOrEqual(0);
      expect(argvs.findIndex((a) => a[0] === "sh")).toBeGreaterThan(maxAt);
    } else {
      expect(argvs).not.toContainEqual(write);
    }
  });

  test("no max (--conntrack-max-per-core=0): hashsize is never touched", () => {
    const { report } = dryRun(["--state", "examples/cluster.yaml", "--conntrack-max-per-core=0"]);
    expect(report.commands.some((c) => c.argv.join(" ").includes(HASHSIZE))).toBe(false);
  });
});

describe("node IPs: a --bind-address of one family keeps the other family's node IP", () => {
  test('--bind-address=IPv4 with nodePortAddresses "primary": IPv6 NodePorts stay on the IPv6 node IP', () => {
    // node-a dual-stack: the Node lists both, the host has both on eth0.
    const cluster = readFileSync("examples/cluster.yaml", "utf8").replace(
      "- { type: InternalIP, address: 192.0.2.10 }",
      "- { type: InternalIP, address: 192.0.2.10 }\n    - { type: InternalIP, address: 2001:db8::10 }",
    );
    expect(cluster).toContain("2001:db8::10");
    const file = join(tempDir(), "state.yaml");
    writeFileSync(
      file,
      `${cluster}---
apiVersion: kube-proxy-ts/v1
kind: HostState
interfaces:
  - { name: eth0, addresses: [192.0.2.10/24, "2001:db8::10/64"] }
`,
    );
    const { code, report } = dryRun([
      "--state",
      file,
      "--bind-address=192.0.2.10",
      "--nodeport-addresses=primary",
    ]);
    expect(code).toBe(0);
    const v6 = report.commands.find((c) => /^ip6tables(-nft|-legacy)?-restore$/.test(c.argv[0] ?? ""));
    const tail = (v6?.stdin ?? "")
      .split("\n")
      .filter((l) => l.includes("-j KUBE-NODEPORTS") && l.startsWith("-A KUBE-SERVICES"));
    // Without the IPv6 node IP, "primary" would leave IPv6 matching every local address.
    expect(tail).toEqual([expect.stringContaining("-d 2001:db8::10 -j KUBE-NODEPORTS")]);
    const v4tail = ipv4Restore(report)
      .split("\n")
      .filter((l) => l.includes("-j KUBE-NODEPORTS") && l.startsWith("-A KUBE-SERVICES"));
    expect(v4tail).toEqual([expect.stringContaining("-d 192.0.2.10 -j KUBE-NODEPORTS")]);
  });
});

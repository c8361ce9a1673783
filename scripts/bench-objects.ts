// Benchmark of hostile or huge single API objects: for each case, a small background cluster
// (namespace bench, Services in 198.51.100.0/24) plus ONE Service blown up along one axis (or,
// case "services", bench-api's 10,000 ordinary Services, for sizing) is written once as a --state
// file, and the built binary runs `--dry-run --output=json` against it in each mode. Printed
// per case and mode (medians over --runs):
//   - wall time, user+sys CPU time and peak RSS of the binary (GNU time: %e %U %S %M);
//   - "rules": the bytes of every planned command's stdin (iptables-restore / nft -f / ipset /
//     ipvsadm / ip -batch input: what the proxy would write to the kernel), and peak RSS / rules;
//   - "rest": the binary's peak RSS on the same cluster without the hostile Service (per mode,
//     median over --runs), and (peak RSS - rest) / rules: what the rules themselves cost, also
//     per 1,000 lines written (the unit a memory limit is sized in);
//   - the floor of that output, where cheap: iptables mode, `iptables-restore --test` of each
//     restore input (parsed and built in user space, not committed); nftables mode, `nft -c -f`
//     of each transaction (checked by the kernel, not committed); each in a throwaway network
//     namespace. ipvs mode: "-" (no ip_vs to check ipvsadm input against).
// Per case also "object": the RSS a bare bun process gains holding the hostile objects' JSON text
// and parsed form at once, what any JSON client holds while such an object arrives; a last table
// sets the memory target (peak RSS - rest <= 2 x rules) against it.
// The figures include what a dry run adds to a sync: the report's Service listing and its JSON.
// --sync-only measures the sync alone instead: scripts/sync-memory.ts runs the same dry run in a
// bun process with the daemon's garbage collections on, reads each planned input through once
// (counting its bytes) and keeps none of it, and writes no report; --binary and --compare then
// name source trees (default ".") whose scripts/sync-memory.ts is run. No floors then.
//
//   bash scripts/bench-objects [--cases=source-ranges,ports,external-ips,external-ips-x-ports,ports-x-endpoints,services]
//                              [--modes=iptables,nftables,ipvs] [--runs=1] [--binary=dist/kube-proxy-ts]
//                              [--compare=PATH] [--timeout=300] [--max-rss=10] [--scale=1] [--no-floors] [--floor-max=256]
//                              [--sync-only]
//
// --compare=PATH runs PATH (printed as "before") and --binary ("after") alternately on the same
// state file, each run swapping which goes first. --timeout is seconds per binary run (and per
// floor); a run that outlives it is killed and shows "timeout". --max-rss (GiB) kills a run whose
// RSS passes it ("killed"): polled from /proc every 100 ms, because an address-space limit
// (ulimit -v) cannot serve: Bun reserves many GiB of address space it never touches. --scale
// multiplies every hostile count (0.01 for a quick check of the script itself). --floor-max
// (MiB, default 256) skips the floor of a larger input ("-"): not cheap, and `nft -c` has the
// kernel build the whole transaction in memory no cap here sees.
//
// Needs root (ip netns), GNU time at /usr/bin/time, iptables-legacy (the state says a legacy
// node, as bench-api), nft. Only namespaces it creates; all deleted, and its temp directory.

import { type ChildProcess, spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { makeService, makeSlice, median, Namespace, runBench } from "./bench-support.ts";

const CASES = [
  "source-ranges",
  "ports",
  "external-ips",
  "external-ips-x-ports",
  "ports-x-endpoints",
  "services",
] as const;
const MODES = ["iptables", "nftables", "ipvs"] as const;
type CaseName = (typeof CASES)[number];
type Mode = (typeof MODES)[number];

const USAGE =
  "bash scripts/bench-objects [--cases=a,b] [--modes=iptables,nftables,ipvs] [--runs=N] [--binary=PATH] [--compare=PATH] [--timeout=SECONDS] [--max-rss=GIB] [--scale=F] [--no-floors] [--floor-max=MIB] [--sync-only]";

interface Options {
  cases: CaseName[];
  modes: Mode[];
  runs: number;
  binary: string;
  compare: string | undefined;
  timeoutS: number;
  maxRssGiB: number;
  scale: number;
  floors: boolean;
  floorMaxMiB: number;
  /** Run scripts/sync-memory.ts of the trees --binary and --compare name, not the binaries. */
  syncOnly: boolean;
}

function listOf<T extends string>(name: string, value: string, allowed: readonly T[]): T[] {
  const items = value.split(",").map((s) => s.trim());
  for (const item of items)
    if (!allowed.includes(item as T)) throw new Error(`--${name}: ${item}? (one of ${allowed.join(",")})`);
  return items as T[];
}

function parseOptions(argv: readonly string[]): Options {
  const o: Options = {
    cases: [...CASES],
    modes: [...MODES],
    runs: 1,
    binary: "dist/kube-proxy-ts",
    compare: undefined,
    timeoutS: 300,
    maxRssGiB: 10,
    scale: 1,
    floors: true,
    floorMaxMiB: 256,
    syncOnly: false,
  };
  let binaryGiven = false;
  for (const a of argv) {
    const eq = a.indexOf("=");
    const k = eq < 0 ? a : a.slice(0, eq);
    const v = eq < 0 ? "" : a.slice(eq + 1);
    if (k === "--cases") o.cases = listOf("cases", v, CASES);
    else if (k === "--modes") o.modes = listOf("modes", v, MODES);
    else if (k === "--runs") o.runs = Number(v);
    else if (k === "--binary") {
      o.binary = v;
      binaryGiven = true;
    } else if (k === "--sync-only") o.syncOnly = true;
    else if (k === "--compare") o.compare = v;
    else if (k === "--timeout") o.timeoutS = Number(v);
    else if (k === "--max-rss") o.maxRssGiB = Number(v);
    else if (k === "--scale") o.scale = Number(v);
    else if (k === "--no-floors") o.floors = false;
    else if (k === "--floor-max") o.floorMaxMiB = Number(v);
    else throw new Error(`unknown option ${a}\nusage: ${USAGE}`);
  }
  if (!(Number.isInteger(o.runs) && o.runs >= 1 && o.runs <= 20)) throw new Error("--runs: 1..20");
  if (!(o.timeoutS > 0)) throw new Error("--timeout: seconds > 0");
  if (!(o.maxRssGiB > 0 && o.maxRssGiB <= 20)) throw new Error("--max-rss: GiB, 0..20");
  if (!(o.scale > 0 && o.scale <= 1)) throw new Error("--scale: 0..1");
  if (!(o.floorMaxMiB >= 0)) throw new Error("--floor-max: MiB >= 0");
  if (o.syncOnly) {
    if (!binaryGiven) o.binary = ".";
    o.floors = false;
    for (const tree of [o.binary, o.compare]) {
      if (tree !== undefined && !existsSync(syncScript(tree)))
        throw new Error(
          `${syncScript(tree)} missing (--sync-only: --binary and --compare name source trees)`,
        );
    }
    return o;
  }
  for (const bin of [o.binary, o.compare]) {
    if (bin !== undefined && !existsSync(bin)) throw new Error(`${bin} missing (bash scripts/build?)`);
  }
  return o;
}

/** The sync-only runner of a source tree. */
function syncScript(tree: string): string {
  return resolve(tree, "scripts/sync-memory.ts");
}

// ---------------------------------------------------------------------------------------------
// The cluster

const MiB = 2 ** 20;
const NODE = "node-a";
const NODE_IP = "192.0.2.10";
const NS = "bench";

/** Dotted IPv4 of a 32-bit number. */
function v4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}
const v4base = (a: number, b: number, c = 0, d = 0) => ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;

// Disjoint ranges per axis, all valid where the API server validates them (no loopback,
// link-local, multicast): source ranges 172.16.0.0/12 (/32 each), external IPs 100.64.0.0/10
// (CGNAT), remote pods 10.64.0.0/10, this node's pods 203.0.113.0/26.
const SOURCE_BASE = v4base(172, 16);
const EXTERNAL_BASE = v4base(100, 64);
const POD_BASE = v4base(10, 64);
const HOSTILE_IP = "198.51.100.200";

type Obj = Record<string, unknown>;
interface Port {
  name: string;
  port: number;
  protocol: "TCP" | "UDP" | "SCTP";
  targetPort: number;
  nodePort?: number;
}
interface Endpoint {
  ip: string;
  node: string;
}

function service(name: string, clusterIP: string, ports: Port[], spec: Obj = {}, status?: Obj): Obj {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: NS, uid: `uid-${name}`, resourceVersion: "1" },
    spec: {
      type: "ClusterIP",
      clusterIP,
      clusterIPs: [clusterIP],
      ipFamilies: ["IPv4"],
      ipFamilyPolicy: "SingleStack",
      ports,
      ...spec,
    },
    ...(status ? { status } : {}),
  };
}

/** Slices as the EndpointSlice controller shards them: at most 1000 endpoints each. */
function slices(service: string, ports: Port[], endpoints: Endpoint[], shard = ""): Obj[] {
  const out: Obj[] = [];
  for (let i = 0; i * 1000 < Math.max(endpoints.length, 1); i++) {
    out.push({
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: `${service}-${shard}${i}`,
        namespace: NS,
        resourceVersion: "1",
        labels: { "kubernetes.io/service-name": service },
      },
      addressType: "IPv4",
      ports: ports.map((p) => ({ name: p.name, port: p.targetPort, protocol: p.protocol })),
      endpoints: endpoints.slice(i * 1000, (i + 1) * 1000).map((e) => ({
        addresses: [e.ip],
        conditions: { ready: true, serving: true, terminating: false },
        nodeName: e.node,
      })),
    });
  }
  return out;
}

/** Endpoint k: the first on this node (from its pod CIDR), the rest on node-b. */
function endpoint(k: number): Endpoint {
  return k === 0 ? { ip: "203.0.113.5", node: NODE } : { ip: v4(POD_BASE + k), node: "node-b" };
}
const endpoints = (n: number) => Array.from({ length: n }, (_, k) => endpoint(k));

/** p0..p(n-1), TCP, 8000+j -> 9000+j. */
function tcpPorts(n: number): Port[] {
  return Array.from({ length: n }, (_, j) => ({
    name: `p${j}`,
    port: 8000 + j,
    protocol: "TCP" as const,
    targetPort: 9000 + j,
  }));
}

/** The Node and a few ordinary Services: ClusterIP, UDP+TCP DNS, NodePort, LoadBalancer. */
function background(): Obj[] {
  const node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: NODE,
      resourceVersion: "1",
      labels: { "kubernetes.io/hostname": NODE, "topology.kubernetes.io/zone": "zone-a" },
    },
    spec: { podCIDR: "203.0.113.0/26", podCIDRs: ["203.0.113.0/26"] },
    status: {
      addresses: [
        { type: "InternalIP", address: NODE_IP },
        { type: "Hostname", address: NODE },
      ],
    },
  };
  const web: Port[] = [{ name: "http", port: 80, protocol: "TCP", targetPort: 8080 }];
  const dns: Port[] = [
    { name: "dns", port: 53, protocol: "UDP", targetPort: 53 },
    { name: "dns-tcp", port: 53, protocol: "TCP", targetPort: 53 },
  ];
  const shop: Port[] = [{ name: "http", port: 80, protocol: "TCP", targetPort: 8080, nodePort: 30080 }];
  const lb: Port[] = [{ name: "https", port: 443, protocol: "TCP", targetPort: 8443, nodePort: 31443 }];
  const two = [endpoint(0), endpoint(1)];
  return [
    node,
    service("web", "198.51.100.10", web),
    ...slices("web", web, two),
    service("dns", "198.51.100.53", dns),
    ...slices("dns", dns, two),
    service("shop", "198.51.100.20", shop, { type: "NodePort" }),
    ...slices("shop", shop, two),
    service(
      "ingress",
      "198.51.100.30",
      lb,
      { type: "LoadBalancer", externalTrafficPolicy: "Local", healthCheckNodePort: 32000 },
      { loadBalancer: { ingress: [{ ip: "192.0.2.200" }] } },
    ),
    ...slices("ingress", lb, two),
  ];
}

/** The hostile Service and its slices; `n` scales a count by --scale. */
function hostile(name: CaseName, n: (count: number) => number): { objects: Obj[]; summary: string } {
  switch (name) {
    case "source-ranges": {
      const count = n(100_000);
      const ports: Port[] = [
        { name: "https", port: 443, protocol: "TCP", targetPort: 8443, nodePort: 31000 },
      ];
      // Distinct /32s: valid CIDRs (no host bits set) however many there are.
      const ranges = Array.from({ length: count }, (_, i) => `${v4(SOURCE_BASE + i)}/32`);
      return {
        objects: [
          service(
            "hostile",
            HOSTILE_IP,
            ports,
            { type: "LoadBalancer", loadBalancerSourceRanges: ranges },
            { loadBalancer: { ingress: [{ ip: "192.0.2.201" }] } },
          ),
          ...slices("hostile", ports, endpoints(2)),
        ],
        summary: `LoadBalancer, ${count} loadBalancerSourceRanges, 1 ingress IP, 1 port, 2 endpoints`,
      };
    }
    case "ports": {
      const count = n(100_000);
      // Port numbers stop at 65535, so port i is number 1 + floor(i/2) as TCP (even i) and UDP
      // (odd i): every (name, port, protocol) distinct, as Service validation requires.
      const ports: Port[] = Array.from({ length: count }, (_, i) => ({
        name: `p${i}`,
        port: 1 + Math.floor(i / 2),
        protocol: i % 2 ? "UDP" : "TCP",
        targetPort: 1 + Math.floor(i / 2),
      }));
      // EndpointSlice validation allows at most 20,000 ports per slice: the ports are split over
      // slices of the same one endpoint (the proxy joins them by port name).
      const objects: Obj[] = [service("hostile", HOSTILE_IP, ports)];
      for (let s = 0; s * 20_000 < count; s++)
        objects.push(
          ...slices("hostile", ports.slice(s * 20_000, (s + 1) * 20_000), [endpoint(1)], `s${s}-`),
        );
      return {
        objects,
        summary: `ClusterIP, ${count} ports (TCP+UDP on 1..${Math.ceil(count / 2)}), 1 endpoint in ${Math.ceil(count / 20_000)} slices`,
      };
    }
    case "external-ips": {
      const count = n(100_000);
      const ports: Port[] = [{ name: "http", port: 80, protocol: "TCP", targetPort: 8080 }];
      const ips = Array.from({ length: count }, (_, i) => v4(EXTERNAL_BASE + i + 1));
      return {
        objects: [
          service("hostile", HOSTILE_IP, ports, { externalIPs: ips }),
          ...slices("hostile", ports, [endpoint(1)]),
        ],
        summary: `ClusterIP, ${count} externalIPs, 1 port, 1 endpoint`,
      };
    }
    case "external-ips-x-ports": {
      const count = n(20_000);
      const ports = tcpPorts(n(100));
      const ips = Array.from({ length: count }, (_, i) => v4(EXTERNAL_BASE + i + 1));
      return {
        objects: [
          service("hostile", HOSTILE_IP, ports, { externalIPs: ips }),
          ...slices("hostile", ports, endpoints(3)),
        ],
        summary: `ClusterIP, ${count} externalIPs x ${ports.length} ports, 3 endpoints`,
      };
    }
    case "services": {
      // Not hostile: the cluster bench-api syncs, for sizing a memory limit by the lines written.
      const count = n(10_000);
      const objects: Obj[] = [];
      for (let i = 0; i < count; i++) objects.push(makeService(i) as Obj, makeSlice(i, 10) as Obj);
      return { objects, summary: `${count} Services x 10 endpoints (the bench-api cluster)` };
    }
    case "ports-x-endpoints": {
      const ports = tcpPorts(n(100));
      const eps = endpoints(n(10_000));
      const objects = [service("hostile", HOSTILE_IP, ports), ...slices("hostile", ports, eps)];
      return {
        objects,
        summary: `ClusterIP, ${ports.length} ports x ${eps.length} endpoints in ${objects.length - 1} slices`,
      };
    }
  }
}

/** A fresh host's tables as iptables-save prints them: built-in chains only. */
const EMPTY_TABLES = [
  ["mangle", ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"]],
  ["filter", ["INPUT", "FORWARD", "OUTPUT"]],
  ["nat", ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"]],
]
  .map(
    ([table, chains]) =>
      `*${table}\n${(chains as string[]).map((c) => `:${c} ACCEPT [0:0]\n`).join("")}COMMIT\n`,
  )
  .join("");

// The host as the state file states it, so every mode plans the same on any machine: a legacy
// iptables node with ipvs modules, nothing programmed yet.
const HOST_STATE = {
  apiVersion: "kube-proxy-ts/v1",
  kind: "HostState",
  modules: ["ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_sh", "nf_conntrack"],
  ipsetVersion: "v7.17",
  nftVersion: "1.0.6",
  iptablesVersion: "iptables v1.8.9 (legacy)",
  nfacct: true,
  interfaces: [
    { name: "lo", addresses: ["127.0.0.1/8"] },
    { name: "eth0", addresses: [`${NODE_IP}/24`] },
  ],
  iptablesSave: EMPTY_TABLES,
  ip6tablesSave: EMPTY_TABLES,
  ipsetSave: "",
  ipvsSave: "",
};

/** One JSON v1 List (the binary parses JSON with a JSON parser, as an API client would). */
export function writeState(
  dir: string,
  name: CaseName | "rest",
  scale: number,
): { file: string; summary: string } {
  const n = (count: number) => Math.max(1, Math.round(count * scale));
  const { objects, summary } =
    name === "rest" ? { objects: [], summary: "the background alone" } : hostile(name, n);
  const file = join(dir, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({ apiVersion: "v1", kind: "List", items: [...background(), ...objects, HOST_STATE] }),
  );
  return { file, summary };
}

/**
 * The RSS a bare bun process gains by holding the hostile objects' JSON text and their parsed
 * form at once (after full collections): what any JSON client of the API server holds while
 * such an object arrives, whatever it then makes of it. Median of three runs, in KiB.
 */
async function objectHeldKiB(dir: string, name: CaseName, scale: number): Promise<number> {
  const n = (count: number) => Math.max(1, Math.round(count * scale));
  const file = join(dir, `${name}.objects.json`);
  writeFileSync(file, JSON.stringify(hostile(name, n).objects));
  const code = [
    'const { readFileSync } = require("node:fs");',
    "const rss = () => { Bun.gc(true); Bun.gc(true); return process.memoryUsage().rss; };",
    "const before = rss();",
    `const text = readFileSync(${JSON.stringify(file)}, "utf8");`,
    "const parsed = JSON.parse(text);",
    "const after = rss();",
    // Both read after the measurement: held through it.
    "console.log(String(Math.round((after - before) / 1024)), text.length, parsed.length);",
  ].join("\n");
  const kib: number[] = [];
  try {
    for (let r = 0; r < 3; r++) {
      const out = await new Promise<string>((done, fail) => {
        const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
        let text = "";
        child.stdout.on("data", (d: Buffer) => {
          text += d.toString();
        });
        child.on("error", fail);
        child.on("close", (c) => (c === 0 ? done(text) : fail(new Error(`object cost probe exited ${c}`))));
      });
      kib.push(Number(out.split(" ")[0]));
    }
  } finally {
    rmSync(file, { force: true });
  }
  return median(kib);
}

// ---------------------------------------------------------------------------------------------
// Measured runs

/** The xtables lock file is shared by every namespace: one of our own stalls nobody else. */
const LOCK_ENV = { XTABLES_LOCKFILE: `/run/kpts-bench-objects-${process.pid}.lock` };

type Status = "ok" | "timeout" | "killed" | "failed";

interface Measured {
  status: Status;
  /** Exit code, or "signal N". */
  exit: string;
  wallS: number;
  cpuS: number;
  rssKiB: number;
  /** What went wrong (stderr's tail), for the notes. */
  detail: string;
}

/** Every child still running (GNU time and the command under it), killed at exit. */
const live = new Set<number>();
process.on("exit", () => {
  for (const pid of live) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
});

function childOf(pid: number): number | undefined {
  try {
    const first = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/)[0];
    return first ? Number(first) : undefined;
  } catch {
    return undefined;
  }
}

function rssKiBOf(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `argv` under /usr/bin/time (its %e %U %S %M), stdin from a file or none, stdout and stderr to
 * files. Polled every 100 ms: killed past the timeout or the RSS cap.
 */
async function measure(
  argv: string[],
  io: { stdin?: string; stdout: string; stderr: string; env?: Record<string, string> },
  limits: { timeoutS: number; capKiB: number },
): Promise<Measured> {
  const timeFile = `${io.stderr}.time`;
  const fds = [
    io.stdin ? openSync(io.stdin, "r") : "ignore",
    openSync(io.stdout, "w"),
    openSync(io.stderr, "w"),
  ];
  let child: ChildProcess;
  try {
    child = spawn("/usr/bin/time", ["-f", "%e %U %S %M", "-o", timeFile, ...argv], {
      stdio: fds as ["ignore", number, number],
      env: { ...process.env, LC_ALL: "C", ...io.env },
    });
  } finally {
    for (const fd of fds) if (typeof fd === "number") closeSync(fd);
  }
  const timePid = child.pid!;
  live.add(timePid);
  const started = performance.now();
  let reason: Status | undefined;
  let why = "";
  let target: number | undefined;
  const exited = new Promise<void>((done) => child.on("exit", () => done()));
  const poll = setInterval(() => {
    target ??= childOf(timePid);
    if (target === undefined || reason) return;
    live.add(target);
    const rss = rssKiBOf(target) ?? 0;
    const s = ((performance.now() - started) / 1000).toFixed(1);
    const mib = (rss / 1024).toFixed(0);
    if (rss > limits.capKiB) {
      reason = "killed";
      why = `RSS ${mib} MiB passed the cap (${(limits.capKiB / 2 ** 20).toFixed(2)} GiB) after ${s} s`;
    } else if (performance.now() - started > limits.timeoutS * 1000) {
      reason = "timeout";
      why = `still running after ${s} s (RSS ${mib} MiB)`;
    }
    if (reason) {
      try {
        process.kill(target, "SIGKILL");
      } catch {
        // it ended meanwhile
      }
    }
  }, 100);
  await exited;
  clearInterval(poll);
  live.delete(timePid);
  if (target !== undefined) live.delete(target);
  const lines = existsSync(timeFile) ? readFileSync(timeFile, "utf8").trim().split("\n") : [];
  rmSync(timeFile, { force: true });
  const figures = (lines.at(-1) ?? "").split(" ").map(Number);
  const signal = /terminated by signal (\d+)/.exec(lines.join("\n"))?.[1];
  const code = /non-zero status (\d+)/.exec(lines.join("\n"))?.[1] ?? (signal ? undefined : "0");
  const tail = () => readFileSync(io.stderr, "utf8").slice(-600).trim();
  // A kill we did not make (the kernel's OOM killer sends SIGKILL too) counts as "killed".
  const status: Status = reason ?? (signal === "9" ? "killed" : signal || code !== "0" ? "failed" : "ok");
  return {
    status,
    exit: signal ? `signal ${signal}` : (code ?? "?"),
    wallS: figures[0] ?? Number.NaN,
    cpuS: (figures[1] ?? Number.NaN) + (figures[2] ?? Number.NaN),
    rssKiB: figures[3] ?? Number.NaN,
    detail: status === "ok" ? "" : why || `exit ${signal ? `signal ${signal}` : code}: ${tail()}`,
  };
}

// ---------------------------------------------------------------------------------------------
// The report, read as a stream (it can be GiBs: more than one JS string holds)

interface ReportCommand {
  argv: string[];
  stdinBytes: number;
  /** The stdin, decoded, when it was asked for. */
  stdinFile?: string;
}

interface Report {
  mode: string;
  commands: ReportCommand[];
  rulesBytes: number;
  /** Lines of every stdin: the rules, entries and elements written, as `-save`/`list` print them. */
  rulesLines: number;
}

// The scanner's states: what the next byte may be.
const S = {
  Value: 0,
  ValueOrEnd: 1,
  Key: 2,
  KeyOrEnd: 3,
  Colon: 4,
  After: 5,
  Literal: 6,
  Str: 7,
  Esc: 8,
  Hex: 9,
  Done: 10,
  SkipTree: 11,
} as const;
type S = (typeof S)[keyof typeof S];

// What is kept of the string being read.
const Use = { Skip: 0, Key: 1, Capture: 2, Stdin: 3 } as const;
type Use = (typeof Use)[keyof typeof Use];

interface Frame {
  arr: boolean;
  key: string;
}

// A top-level array's or object's end in the binary's two-space indented JSON.
const END_ARRAY = Buffer.from("\n  ]");
const END_OBJECT = Buffer.from("\n  }");

/** A JSON escape's letter -> the byte it stands for. */
const ESCAPED = new Map<number, number>(
  [
    ["n", "\n"],
    ["t", "\t"],
    ["r", "\r"],
    ["b", "\b"],
    ["f", "\f"],
    ['"', '"'],
    ["\\", "\\"],
    ["/", "/"],
  ].map(([k, v]) => [k!.charCodeAt(0), v!.charCodeAt(0)]),
);

/**
 * Reads the `--output=json` report: `mode`, each command's argv, and the decoded byte length of
 * each command's stdin; a stdin is written to a file of `dir` when `save(argv)` says so (argv
 * precedes stdin in each command object). Other values are skipped unread.
 */
export function scanReport(file: string, dir: string, save: (argv: string[]) => boolean): Report {
  const report: Report = { mode: "", commands: [], rulesBytes: 0, rulesLines: 0 };
  const stack: Frame[] = [];
  let state: S = S.Value;
  let use: Use = Use.Skip;
  let bytes: number[] = []; // a key or captured string being read
  let hex = "";
  let count = 0;
  // A top-level value nothing is read from (the Service listing, ipvs' virtual servers: most of
  // the report) is skipped. The binary indents its JSON by two (strings never hold a raw newline),
  // so such a value ends at the first "\n  ]" or "\n  }": found by a native search, the bytes
  // between never looked at. Other layouts fall back to counting brackets.
  let pretty = false;
  let skipClose = 0;
  let skipMode: "first" | "search" | "depth" = "first";
  let skipDepth = 0;
  let skipStr = false;
  let skipEsc = false;
  let carry = 0; // bytes kept from the last chunk, where a search may have been cut short
  let out: { fd: number; buf: Buffer; len: number } | undefined;
  const emit = (b: Buffer | number) => {
    if (!out) return;
    if (typeof b === "number") {
      if (out.len === out.buf.length) flush();
      out.buf[out.len++] = b;
      return;
    }
    if (out.len + b.length > out.buf.length) flush();
    if (b.length > out.buf.length) writeSync(out.fd, b);
    else out.len += b.copy(out.buf, out.len);
  };
  const flush = () => {
    if (out && out.len > 0) writeSync(out.fd, out.buf, 0, out.len);
    if (out) out.len = 0;
  };
  const command = () => report.commands.at(-1)!;
  // Where a string value starts decides what is kept of it.
  const valueUse = (): Use => {
    const d = stack.length;
    if (d === 1 && stack[0]!.key === "mode") return Use.Capture;
    if (stack[0]?.key !== "commands") return Use.Skip;
    if (d === 3 && stack[2]!.key === "stdin") return Use.Stdin;
    if (d === 4 && stack[2]!.key === "argv") return Use.Capture;
    return Use.Skip;
  };
  const startString = (u: Use) => {
    use = u;
    bytes = [];
    if (u === Use.Stdin) {
      count = 0;
      const cmd = command();
      if (save(cmd.argv)) {
        cmd.stdinFile = join(dir, `stdin-${report.commands.length - 1}`);
        out = { fd: openSync(cmd.stdinFile, "w"), buf: Buffer.allocUnsafe(1 << 20), len: 0 };
      }
    }
    state = S.Str;
  };
  const endString = () => {
    const text = use === Use.Key || use === Use.Capture ? Buffer.from(bytes).toString("utf8") : "";
    if (use === Use.Key) {
      stack.at(-1)!.key = text;
      state = S.Colon;
      return;
    }
    if (use === Use.Capture) {
      if (stack.length === 1) report.mode = text;
      else command().argv.push(text);
    } else if (use === Use.Stdin) {
      command().stdinBytes = count;
      report.rulesBytes += count;
      if (out) {
        flush();
        closeSync(out.fd);
        out = undefined;
      }
    }
    state = S.After;
  };
  const decoded = (b: number[] | Buffer) => {
    if (use === Use.Stdin) {
      count += b.length;
      for (let at = b.indexOf(10); at >= 0; at = b.indexOf(10, at + 1)) report.rulesLines++;
      emit(Buffer.isBuffer(b) ? b : Buffer.from(b));
    } else if (use !== Use.Skip) for (const x of b) bytes.push(x);
  };
  const push = (arr: boolean) => {
    stack.push({ arr, key: "" });
    // A new element of `commands`.
    if (!arr && stack.length === 3 && stack[0]!.key === "commands" && stack[1]!.arr)
      report.commands.push({ argv: [], stdinBytes: 0 });
    state = arr ? S.ValueOrEnd : S.KeyOrEnd;
  };
  const pop = () => {
    stack.pop();
    state = stack.length === 0 ? S.Done : S.After;
  };

  const fd = openSync(file, "r");
  const buf = Buffer.allocUnsafe(4 << 20);
  try {
    let n = 0;
    for (let first = true; ; first = false) {
      // A search cut at the chunk's end goes on over its last bytes, moved to the front.
      if (carry > 0) buf.copyWithin(0, n - carry, n);
      const read = readSync(fd, buf, carry, buf.length - carry, null);
      if (read === 0) break;
      n = carry + read;
      carry = 0;
      if (first) pretty = buf[0] === 0x7b && buf[1] === 0x0a;
      let p = 0;
      while (p < n) {
        const c = buf[p]!;
        switch (state) {
          case S.Str: {
            // The bulk of the input: a run of plain bytes up to a quote or a backslash.
            const from = p;
            let q = p;
            while (q < n) {
              const b = buf[q]!;
              if (b === 0x22 || b === 0x5c) break;
              q++;
            }
            if (q > from && use !== Use.Skip) decoded(buf.subarray(from, q));
            p = q;
            if (p < n) {
              p++;
              if (buf[p - 1] === 0x22) endString();
              else state = S.Esc;
            }
            continue;
          }
          case S.Esc:
            if (c === 0x75) {
              hex = "";
              state = S.Hex;
            } else {
              const e = ESCAPED.get(c);
              if (e === undefined) throw new Error(`report: bad escape \\${String.fromCharCode(c)}`);
              if (use !== Use.Skip) decoded([e]);
              state = S.Str;
            }
            p++;
            continue;
          case S.Hex:
            hex += String.fromCharCode(c);
            p++;
            // JSON.stringify escapes control characters and lone surrogates only: one code unit
            // each, as UTF-8 (a lone surrogate as U+FFFD, as Buffer writes it).
            if (hex.length === 4) {
              if (use !== Use.Skip)
                decoded(Buffer.from(String.fromCharCode(Number.parseInt(hex, 16)), "utf8"));
              state = S.Str;
            }
            continue;
          case S.SkipTree: {
            if (skipMode === "first") {
              // "[]" / "{}": empty, and printed on one line.
              if (c === skipClose) {
                state = S.After;
                p++;
                continue;
              }
              skipMode = pretty && c === 0x0a ? "search" : "depth";
            }
            if (skipMode === "search") {
              const end = buf.subarray(0, n).indexOf(skipClose === 0x5d ? END_ARRAY : END_OBJECT, p);
              if (end >= 0) {
                state = S.After;
                p = end + 4;
              } else {
                carry = Math.min(3, n - p);
                p = n;
              }
              continue;
            }
            let q = p;
            while (q < n) {
              const b = buf[q++]!;
              if (skipStr) {
                if (skipEsc) skipEsc = false;
                else if (b === 0x5c) skipEsc = true;
                else if (b === 0x22) skipStr = false;
              } else if (b === 0x22) skipStr = true;
              else if (b === 0x7b || b === 0x5b) skipDepth++;
              else if ((b === 0x7d || b === 0x5d) && --skipDepth === 0) {
                state = S.After;
                break;
              }
            }
            p = q;
            continue;
          }
          case S.Literal:
            if (
              c === 0x2c ||
              c === 0x7d ||
              c === 0x5d ||
              c === 0x20 ||
              c === 0x0a ||
              c === 0x0d ||
              c === 0x09
            ) {
              state = S.After;
              continue; // the delimiter is read again in S.After
            }
            p++;
            continue;
        }
        p++;
        if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
        // Widened again: tsc cannot see the closures above change it.
        const now = state as S;
        switch (now) {
          case S.ValueOrEnd:
          case S.Value:
            if (now === S.ValueOrEnd && c === 0x5d) pop();
            else if ((c === 0x7b || c === 0x5b) && stack.length === 1 && stack[0]!.key !== "commands") {
              state = S.SkipTree;
              skipClose = c === 0x7b ? 0x7d : 0x5d;
              skipMode = "first";
              skipDepth = 1;
              skipStr = false;
              skipEsc = false;
            } else if (c === 0x7b) push(false);
            else if (c === 0x5b) push(true);
            else if (c === 0x22) startString(valueUse());
            else {
              state = S.Literal;
              p--; // the literal's first byte
            }
            break;
          case S.KeyOrEnd:
          case S.Key:
            if (now === S.KeyOrEnd && c === 0x7d) pop();
            else if (c === 0x22) startString(Use.Key);
            else throw new Error("report: a key expected");
            break;
          case S.Colon:
            if (c !== 0x3a) throw new Error("report: ':' expected");
            state = S.Value;
            break;
          case S.After: {
            const top = stack.at(-1);
            if (c === 0x2c && top) state = top.arr ? S.Value : S.Key;
            else if ((c === 0x7d && top && !top.arr) || (c === 0x5d && top?.arr)) pop();
            else throw new Error(`report: unexpected '${String.fromCharCode(c)}'`);
            break;
          }
          case S.Done:
            throw new Error("report: text after the end");
        }
      }
    }
  } finally {
    closeSync(fd);
    if (out) closeSync(out.fd);
  }
  if ((state as S) !== S.Done) throw new Error("report: cut short");
  return report;
}

// ---------------------------------------------------------------------------------------------
// Floors

const isRestore = (argv: string[]) => /^ip6?tables(-legacy|-nft)?-restore$/.test(argv[0] ?? "");
const isNftFile = (argv: string[]) => argv[0] === "nft" && argv.includes("-f");

function floorCommand(mode: string, argv: string[]): boolean {
  return (mode === "iptables" && isRestore(argv)) || (mode === "nftables" && isNftFile(argv));
}

/** The argv that checks one planned input without committing it. */
function checkArgv(argv: string[], file: string): string[] {
  if (isRestore(argv)) return [argv[0]!, "--test", ...argv.slice(1)];
  return ["nft", "-c", "-f", file];
}

interface Floor {
  status: Status | "none";
  wallS: number;
  detail: string;
}

/** Each saved input checked in a fresh namespace of its own; the walls summed. */
async function floorOf(report: Report, dir: string, o: Options): Promise<Floor> {
  const inputs = report.commands.filter((c) => c.stdinFile);
  if (inputs.length === 0) return { status: "none", wallS: Number.NaN, detail: "" };
  const bytes = inputs.reduce((sum, c) => sum + c.stdinBytes, 0);
  // Not cheap any more, and nft -c makes the kernel build it all: kernel memory no cap sees.
  if (bytes > o.floorMaxMiB * MiB)
    return {
      status: "none",
      wallS: Number.NaN,
      detail: `skipped: ${(bytes / MiB).toFixed(0)} MiB of input is over --floor-max=${o.floorMaxMiB}`,
    };
  const ns = Namespace.create();
  try {
    let wallS = 0;
    for (const c of inputs) {
      const argv = ["ip", "netns", "exec", ns.name, ...checkArgv(c.argv, c.stdinFile!)];
      const m = await measure(
        argv,
        {
          stdin: c.stdinFile!,
          stdout: join(dir, "floor.out"),
          stderr: join(dir, "floor.err"),
          env: LOCK_ENV,
        },
        { timeoutS: o.timeoutS, capKiB: o.maxRssGiB * 2 ** 20 },
      );
      if (m.status !== "ok") return { status: m.status, wallS: m.wallS, detail: `${c.argv[0]}: ${m.detail}` };
      wallS += m.wallS;
    }
    return { status: "ok", wallS, detail: "" };
  } finally {
    ns.delete();
    rmSync(LOCK_ENV.XTABLES_LOCKFILE, { force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// One run of one binary

interface RunResult extends Measured {
  rulesBytes: number;
  rulesLines: number;
  floor: Floor;
  /** ipvs mode held the hostile Service out: its members do not fit a set (65,536 at most). */
  heldOut: boolean;
}

/** The binary's line for a Service held out of ipvs mode's sets (src/modes/ipvs/plan-cache.ts). */
const HELD_OUT_LINE = "ipset members do not fit; it is not programmed";

async function runOnce(bin: string, mode: Mode, state: string, top: string, o: Options): Promise<RunResult> {
  // The run's files (report, stderr, saved inputs) in a directory of their own, removed after.
  const dir = mkdtempSync(join(top, "run-"));
  const reportFile = join(dir, "report.json");
  const stderrFile = join(dir, "binary.err");
  const argv = [
    ...(o.syncOnly ? [process.execPath, syncScript(bin)] : [resolve(bin)]),
    "--dry-run",
    "--output=json",
    `--mode=${mode}`,
    `--state=${state}`,
    `--hostname-override=${NODE}`,
    "--conntrack-max-per-core=0",
    "--iptables-backend=legacy",
  ];
  const m = await measure(
    argv,
    { stdout: reportFile, stderr: stderrFile },
    { timeoutS: o.timeoutS, capKiB: o.maxRssGiB * 2 ** 20 },
  );
  // Exit 3: the plan is whole but a prerequisite check failed (printed in the notes).
  if (m.exit === "3") m.status = "ok";
  const heldOut = existsSync(stderrFile) && readFileSync(stderrFile, "utf8").includes(HELD_OUT_LINE);
  let rulesBytes = Number.NaN;
  let rulesLines = Number.NaN;
  let floor: Floor = { status: "none", wallS: Number.NaN, detail: "" };
  try {
    if (m.status === "ok" && o.syncOnly) {
      ({ rulesBytes, rulesLines } = JSON.parse(readFileSync(reportFile, "utf8")) as {
        rulesBytes: number;
        rulesLines: number;
      });
    } else if (m.status === "ok") {
      const report = scanReport(reportFile, dir, (a) => o.floors && floorCommand(mode, a));
      rulesBytes = report.rulesBytes;
      rulesLines = report.rulesLines;
      if (m.exit === "3") m.detail = "exit 3: a prerequisite check failed; the plan was computed";
      rmSync(reportFile, { force: true }); // before the floor: the disk holds one big file at a time
      if (o.floors) floor = await floorOf(report, dir, o);
    }
  } catch (err) {
    m.status = "failed";
    m.detail = err instanceof Error ? err.message : String(err);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { ...m, rulesBytes, rulesLines, floor, heldOut };
}

// ---------------------------------------------------------------------------------------------
// Printing

const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : "-");
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "-");

interface Cell {
  wall: string;
  cpu: string;
  rss: string;
  rules: string;
  ratio: string;
  rest: string;
  net: string;
  perKiloLine: string;
  floor: string;
}

/**
 * Medians of the runs that finished; any run that did not names the cell instead. `restKiB`: the
 * same binary's peak RSS without the hostile Service, in the same mode.
 */
function cell(runs: RunResult[], restKiB: number): Cell {
  const bad = runs.find((r) => r.status !== "ok");
  if (bad)
    return {
      wall: bad.status,
      cpu: "-",
      rss: "-",
      rules: "-",
      ratio: "-",
      rest: "-",
      net: "-",
      perKiloLine: "-",
      floor: "-",
    };
  const m = (pick: (r: RunResult) => number) => median(runs.map(pick));
  const rss = m((r) => r.rssKiB * 1024);
  const rules = m((r) => r.rulesBytes);
  const lines = m((r) => r.rulesLines);
  const above = rss - restKiB * 1024;
  const floors = runs.map((r) => r.floor);
  const badFloor = floors.find((f) => f.status !== "ok");
  return {
    wall: f2(m((r) => r.wallS)),
    cpu: f2(m((r) => r.cpuS)),
    rss: f1(rss / MiB),
    rules: f1(rules / MiB),
    ratio: rules > 0 ? f2(rss / rules) : "-",
    rest: f1(restKiB / 1024),
    net: rules > 0 && Number.isFinite(restKiB) ? f2(above / rules) : "-",
    perKiloLine: lines > 0 && Number.isFinite(restKiB) ? f2(above / MiB / (lines / 1000)) : "-",
    floor: badFloor
      ? badFloor.status === "none"
        ? "-"
        : badFloor.status
      : f2(median(floors.map((f) => f.wallS))),
  };
}

const HEAD: Cell = {
  wall: "wall s",
  cpu: "CPU s",
  rss: "peak RSS MiB",
  rules: "rules MiB",
  ratio: "RSS/rules",
  rest: "rest MiB",
  net: "(RSS-rest)/rules",
  perKiloLine: "MiB/1k lines",
  floor: "floor s",
};

function cellText(c: Cell): string {
  return [
    c.wall.padStart(8),
    c.cpu.padStart(8),
    c.rss.padStart(13),
    c.rules.padStart(10),
    c.ratio.padStart(10),
    c.rest.padStart(9),
    c.net.padStart(17),
    c.perKiloLine.padStart(13),
    c.floor.padStart(8),
  ].join("");
}

function runLine(r: RunResult): string {
  if (r.status !== "ok")
    return `${r.status} after ${f2(r.wallS)} s wall (peak RSS ${f1(r.rssKiB / 1024)} MiB, exit ${r.exit})`;
  const floor =
    r.floor.status === "ok" ? `${f2(r.floor.wallS)} s` : r.floor.status === "none" ? "-" : r.floor.status;
  return `${f2(r.wallS)} s wall, ${f2(r.cpuS)} s CPU, peak RSS ${f1(r.rssKiB / 1024)} MiB, rules ${f1(r.rulesBytes / MiB)} MiB (${r.rulesLines} lines), floor ${floor}`;
}

// ---------------------------------------------------------------------------------------------

async function main(o: Options): Promise<void> {
  // Labelled "after" (--binary) and "before" (--compare), or the one binary alone.
  const bins: { label: string; path: string }[] = o.compare
    ? [
        { label: "before", path: o.compare },
        { label: "after", path: o.binary },
      ]
    : [{ label: "", path: o.binary }];
  console.log(
    `bench-objects${o.syncOnly ? " --sync-only" : ""}: runs=${o.runs}, timeout ${o.timeoutS} s, RSS cap ${o.maxRssGiB} GiB, scale ${o.scale}, floors ${o.floors ? "on" : "off"}`,
  );
  for (const b of bins) console.log(`  ${b.label || "binary"}: ${resolve(b.path)}`);
  const dir = mkdtempSync(join(tmpdir(), "kpts-bench-objects-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const rows: { name: CaseName; mode: Mode; cells: Cell[]; heldOut: boolean }[] = [];
  const notes: string[] = [];
  const objectMiB = new Map<CaseName, number>();
  try {
    // Each binary's RSS at rest per mode: the same cluster without the hostile Service.
    const rest = bins.map(() => new Map<Mode, number>());
    {
      const { file } = writeState(dir, "rest", o.scale);
      const quiet = { ...o, floors: false };
      for (const mode of o.modes) {
        for (let i = 0; i < bins.length; i++) {
          const kib: number[] = [];
          for (let r = 0; r < o.runs; r++) {
            const res = await runOnce(bins[i]!.path, mode, file, dir, quiet);
            if (res.status === "ok") kib.push(res.rssKiB);
          }
          const m = kib.length ? median(kib) : Number.NaN;
          rest[i]!.set(mode, m);
          const who = bins[i]!.label ? ` ${bins[i]!.label}` : "";
          console.log(`  rest ${mode}${who}: peak RSS ${f1(m / 1024)} MiB (median of ${kib.length})`);
        }
      }
      rmSync(file, { force: true });
    }
    for (const name of o.cases) {
      const { file, summary } = writeState(dir, name, o.scale);
      console.log(`${name}: ${summary} (state ${f1(statSync(file).size / MiB)} MiB)`);
      const held = (await objectHeldKiB(dir, name, o.scale)) / 1024;
      objectMiB.set(name, held);
      console.log(`  the object's text and parsed form, held at once in a bare bun process: ${f1(held)} MiB`);
      for (const mode of o.modes) {
        const results: RunResult[][] = bins.map(() => []);
        for (let r = 0; r < o.runs; r++) {
          // Alternate which binary goes first, so neither always meets a warmer page cache.
          const order = bins.map((_, i) => i);
          if (r % 2 === 1) order.reverse();
          for (const i of order) {
            const res = await runOnce(bins[i]!.path, mode, file, dir, o);
            results[i]!.push(res);
            const who = bins[i]!.label ? ` ${bins[i]!.label}` : "";
            console.log(`  ${name} ${mode}${who} run ${r + 1}: ${runLine(res)}`);
            const what = `${name} ${mode}${who} run ${r + 1}`;
            if (res.detail) notes.push(`${what}: ${res.detail.replace(/\s+/g, " ").slice(0, 400)}`);
            if (res.floor.detail)
              notes.push(
                `${what} floor${res.floor.status === "none" ? "" : ` ${res.floor.status}`}: ${res.floor.detail.replace(/\s+/g, " ").slice(0, 400)}`,
              );
          }
        }
        rows.push({
          name,
          mode,
          cells: results.map((r, i) => cell(r, rest[i]!.get(mode)!)),
          heldOut: results[results.length - 1]!.some((r) => r.heldOut),
        });
      }
      rmSync(file, { force: true });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const lead = (a: string, b: string) => `${a.padEnd(22)}${b.padEnd(10)}`;
  console.log("");
  if (bins.length > 1) {
    const width = cellText(HEAD).length;
    const group = (l: string) => ` | ${`-- ${l} `.padEnd(width, "-")}`;
    console.log(`${lead("", "")}${bins.map((b) => group(b.label)).join("")}`);
  }
  const sep = bins.length > 1 ? " | " : "";
  console.log(`${lead("case", "mode")}${bins.map(() => `${sep}${cellText(HEAD)}`).join("")}`);
  for (const row of rows)
    console.log(`${lead(row.name, row.mode)}${row.cells.map((c) => `${sep}${cellText(c)}`).join("")}`);
  console.log(
    "(medians; rules = bytes of every planned command's stdin; MiB/1k lines = (RSS-rest) per 1,000 lines of it; rest = peak RSS without the hostile Service; floor = iptables-restore --test / nft -c -f of that input in a fresh netns, - where none)",
  );
  // The memory target (peak RSS - rest <= 2 x rules) against what reading the object costs.
  console.log("");
  console.log(`${lead("case", "mode")}${"2 x rules MiB".padStart(14)}${"object MiB".padStart(12)}  target`);
  for (const row of rows) {
    const last = row.cells[row.cells.length - 1]!;
    const twice = Number(last.rules) * 2;
    const held = objectMiB.get(row.name) ?? Number.NaN;
    const verdict = row.heldOut
      ? `held out of ipvs mode's sets (nothing written); peak - rest ${f1(Number(last.rss) - Number(last.rest))} MiB`
      : !Number.isFinite(twice)
        ? "-"
        : held >= twice
          ? "below the object's own cost"
          : Number(last.net) <= 2
            ? "met"
            : "not met";
    console.log(`${lead(row.name, row.mode)}${f1(twice).padStart(14)}${f1(held).padStart(12)}  ${verdict}`);
  }
  console.log(
    "(object = the RSS a bare bun process gains holding the hostile objects' JSON text and parsed form at once, median of 3: what any JSON client holds while the object arrives; target per the last binary's (RSS-rest)/rules)",
  );
  if (notes.length) console.log(`notes:\n${notes.map((n) => `  ${n}`).join("\n")}`);
}

if (import.meta.main) {
  await runBench("bench-objects", async () => {
    await main(parseOptions(process.argv.slice(2)));
  });
}

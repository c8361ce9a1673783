// Real-kernel test topologies in network namespaces. Everything a test builds lives in
// namespaces it creates itself (named kpts-<pid36>-<rand>-<role>) and deletes again; nothing is
// ever attached to the root namespace, and no namespace has a default route, so no packet can
// leave the topology.
//
// Address plan (documentation ranges only):
//
//   192.0.2.0/24    "outside": clients, the node's addresses toward them, external IPs
//     192.0.2.0/26      link client <-> node:   client 192.0.2.1, node 192.0.2.10 (node's InternalIP)
//     192.0.2.64/26     link client2 <-> node:  client2 192.0.2.65, node 192.0.2.70
//     192.0.2.128/25    Service externalIPs and LoadBalancer ingress IPs (on no interface;
//                       both clients route them to the node)
//     => a loadBalancerSourceRanges of 192.0.2.0/26 lets client in and keeps client2 out.
//   198.51.100.0/24 Service cluster IPs (on no interface). The node routes them, and
//                   192.0.2.128/25, into a carrier-less sink veth so that local processes get a
//                   route (and a source address) before the OUTPUT DNAT steers them to a pod;
//                   anything not DNATed is dropped there.
//   203.0.113.0/24  pods. Node node-a's pod CIDR is 203.0.113.0/26. Every pod sits in its own
//                   namespace behind its own veth (pod side eth0, 203.0.113.x/32; node side
//                   vp-<pod>, holding the gateway address 203.0.113.1/32 on every pod link).
//                   The node has a /32 route per pod; pods route 192.0.2.0/24, 198.51.100.0/24
//                   and 203.0.113.0/24 via 203.0.113.1, so pod <-> pod traffic is routed (and
//                   NATed) by the node too. MASQUERADE toward a pod therefore shows 203.0.113.1.
//
// Inside the node namespace ip_forward is 1, rp_filter 0 and ICMP redirects are off (hairpin
// traffic leaves by the interface it came in on). Every loop and wait here is bounded.

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { scaled } from "./kernel-vm.ts";

export const ADDR = {
  client: "192.0.2.1",
  client2: "192.0.2.65",
  /** The node's address toward client; also its InternalIP. */
  node: "192.0.2.10",
  /** The node's address toward client2. */
  nodeToClient2: "192.0.2.70",
  /** The node's (gateway) address on every pod link: what pods see after MASQUERADE. */
  podGateway: "203.0.113.1",
  clientNet: "192.0.2.0/26",
  client2Net: "192.0.2.64/26",
  externalNet: "192.0.2.128/25",
  serviceNet: "198.51.100.0/24",
  podNet: "203.0.113.0/24",
  nodePodCIDR: "203.0.113.0/26",
} as const;

export interface PodSpec {
  /** Short name (letters, digits, '-'; at most 8 chars): namespace role and interface suffix. */
  readonly name: string;
  /** An address inside 203.0.113.0/24 other than the gateway 203.0.113.1. */
  readonly ip: string;
}

export interface TopologySpec {
  readonly pods: readonly PodSpec[];
  /** Create the client namespace (default true). */
  readonly client?: boolean;
  /** Create the second client, outside 192.0.2.0/26 (default false). */
  readonly client2?: boolean;
}

export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** True when the command was killed at its timeout. */
  readonly timedOut: boolean;
}

export interface RunOptions {
  readonly timeoutMs?: number;
  readonly stdin?: string;
  readonly env?: Record<string, string>;
}

export interface Daemon {
  readonly pid: number;
  readonly argv: readonly string[];
  readonly ns: string;
  stdout(): string;
  stderr(): string;
  /** Exit code once exited (signal deaths give 128+n), undefined while running. */
  exitCode(): number | undefined;
  readonly exited: Promise<number>;
  /** Resolves with the match once stdout or stderr matches; rejects at the deadline or on exit. */
  waitForOutput(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** SIGTERM, then SIGKILL after graceMs; resolves once the process is gone. */
  kill(graceMs?: number): Promise<void>;
}

/** A role ("node", "client", "client2", a pod name) or a full namespace name. */
export type NsRef = string;

export interface Topology {
  readonly id: string;
  readonly spec: TopologySpec;
  /** Role -> namespace name. */
  readonly namespaces: Readonly<Record<string, string>>;
  nsName(ref: NsRef): string;
  run(ns: NsRef, argv: readonly string[], opts?: RunOptions): Promise<RunResult>;
  /** Like run, but throws with the output when the command fails. */
  must(ns: NsRef, argv: readonly string[], opts?: RunOptions): Promise<string>;
  spawnDaemon(ns: NsRef, argv: readonly string[], opts?: { env?: Record<string, string> }): Daemon;
  /**
   * A daemon started in the root namespace that enters a namespace of this topology by itself
   * (e.g. `podman run --network=ns:/run/netns/NAME`); stopped with the topology like the others.
   */
  spawnHostDaemon(argv: readonly string[], opts?: { env?: Record<string, string> }): Daemon;
  destroy(): Promise<void>;
}

const NS_PREFIX = "kpts-";
// kpts-<pid base36>-<6 hex>-<role>. Other tests' namespaces (e.g. kpts-<pid>-<hex>, with no
// role) never match, so the sweep leaves them alone.
const NAME_RE = /^kpts-([0-9a-z]{1,8})-[0-9a-f]{6}-[a-z][a-z0-9-]{0,7}$/;
const IP = "ip";

function runHost(argv: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const [cmd, ...args] = argv;
  if (!cmd) throw new Error("empty argv");
  return new Promise((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(cmd, args, {
        stdio: ["pipe", "pipe", "pipe"],
        env: { ...process.env, ...opts.env },
      });
    } catch (err) {
      resolve({ code: -1, stdout: "", stderr: String(err), timedOut: false });
      return;
    }
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout?.on("data", (d) => {
      stdout += d;
    });
    child.stderr?.on("data", (d) => {
      stderr += d;
    });
    child.stdin?.on("error", () => {});
    child.stdin?.end(opts.stdin ?? "");
    const timer = setTimeout(
      () => {
        timedOut = true;
        child.kill("SIGKILL");
      },
      scaled(opts.timeoutMs ?? 15_000),
    );
    child.on("error", (err) => {
      stderr += String(err);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const c = code ?? (signal ? 128 + signalNumber(signal) : -1);
      resolve({ code: c, stdout, stderr, timedOut });
    });
  });
}

function signalNumber(sig: NodeJS.Signals): number {
  return sig === "SIGKILL" ? 9 : sig === "SIGTERM" ? 15 : sig === "SIGINT" ? 2 : 1;
}

async function mustHost(argv: readonly string[], opts: RunOptions = {}): Promise<string> {
  const r = await runHost(argv, opts);
  if (r.code !== 0) {
    throw new Error(
      `command failed (${r.code}${r.timedOut ? ", timed out" : ""}): ${argv.join(" ")}\n${r.stderr}`,
    );
  }
  return r.stdout;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function listNamespaces(): string[] {
  const r = spawnSync(IP, ["netns", "list"], { encoding: "utf8", timeout: 10_000 });
  if (r.status !== 0) return [];
  return r.stdout
    .split("\n")
    .map((l) => l.split(" ")[0] ?? "")
    .filter((n) => n.startsWith(NS_PREFIX));
}

let swept = false;

function killPidsIn(name: string): void {
  const r = spawnSync(IP, ["netns", "pids", name], { encoding: "utf8", timeout: 5000 });
  for (const pid of (r.stdout ?? "").split(/\s+/).filter(Boolean).map(Number)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}

/**
 * Deletes kpts-* namespaces left by earlier runs whose creating process is gone. Namespaces of a
 * run still in progress (its pid is alive) are left alone.
 */
export function sweepStaleNamespaces(): string[] {
  const removed: string[] = [];
  for (const name of listNamespaces()) {
    const m = NAME_RE.exec(name);
    if (!m?.[1]) continue;
    const pid = Number.parseInt(m[1], 36);
    if (pid === process.pid || pidAlive(pid)) continue;
    // Whatever still runs in there was started by that earlier run of this harness.
    killPidsIn(name);
    const r = spawnSync(IP, ["netns", "del", name], { encoding: "utf8", timeout: 10_000 });
    if (r.status === 0) removed.push(name);
  }
  return removed;
}

export function namespaceExists(name: string): boolean {
  return listNamespaces().includes(name);
}

// Safety net: if the test process dies without running afterAll, still delete our namespaces.
const live = new Set<TopologyImpl>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const t of live) t.destroySync();
  });
  // An interrupted run (Ctrl-C) skips afterAll: clean up, then exit as the signal would.
  for (const [sig, code] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const) {
    process.once(sig, () => {
      for (const t of live) t.destroySync();
      process.exit(code);
    });
  }
}

class DaemonImpl implements Daemon {
  readonly pid: number;
  readonly exited: Promise<number>;
  private out = "";
  private err = "";
  private code: number | undefined;
  private waiters = new Set<() => void>();

  constructor(
    private readonly child: ChildProcess,
    readonly argv: readonly string[],
    readonly ns: string,
  ) {
    if (child.pid === undefined) throw new Error(`could not start ${argv.join(" ")} in ${ns}`);
    this.pid = child.pid;
    child.stdout?.on("data", (d) => {
      this.out += d;
      this.notify();
    });
    child.stderr?.on("data", (d) => {
      this.err += d;
      this.notify();
    });
    this.exited = new Promise((resolve) => {
      child.on("close", (code, signal) => {
        this.code = code ?? (signal ? 128 + signalNumber(signal) : -1);
        this.notify();
        resolve(this.code);
      });
    });
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  stdout(): string {
    return this.out;
  }

  stderr(): string {
    return this.err;
  }

  exitCode(): number | undefined {
    return this.code;
  }

  waitForOutput(re: RegExp, unscaledMs = 10_000): Promise<RegExpMatchArray> {
    const timeoutMs = scaled(unscaledMs);
    return new Promise((resolve, reject) => {
      const check = () => {
        const m = this.out.match(re) ?? this.err.match(re);
        if (m) {
          done();
          resolve(m);
        } else if (this.code !== undefined) {
          done();
          reject(
            new Error(
              `${this.argv.join(" ")} exited with ${this.code} before printing ${re}\nstdout:\n${this.out}\nstderr:\n${this.err}`,
            ),
          );
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${re} from ${this.argv.join(" ")}\nstdout:\n${this.out}\nstderr:\n${this.err}`,
          ),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  async kill(graceMs = 2000): Promise<void> {
    if (this.code !== undefined) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => {
      if (this.code === undefined) this.child.kill("SIGKILL");
    }, scaled(graceMs));
    await this.exited;
    clearTimeout(timer);
  }

  killSync(): void {
    if (this.code === undefined) {
      try {
        process.kill(this.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
}

class TopologyImpl implements Topology {
  readonly namespaces: Record<string, string> = {};
  private readonly daemons = new Set<DaemonImpl>();
  private destroyed = false;

  constructor(
    readonly id: string,
    readonly spec: TopologySpec,
  ) {}

  nsName(ref: NsRef): string {
    const name = this.namespaces[ref] ?? (Object.values(this.namespaces).includes(ref) ? ref : undefined);
    if (!name) throw new Error(`no namespace ${ref} in topology ${this.id}`);
    return name;
  }

  run(ns: NsRef, argv: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
    return runHost([IP, "netns", "exec", this.nsName(ns), ...argv], opts);
  }

  async must(ns: NsRef, argv: readonly string[], opts: RunOptions = {}): Promise<string> {
    const r = await this.run(ns, argv, opts);
    if (r.code !== 0) {
      throw new Error(
        `command failed in ${ns} (${r.code}${r.timedOut ? ", timed out" : ""}): ${argv.join(" ")}\n${r.stderr}${r.stdout}`,
      );
    }
    return r.stdout;
  }

  spawnDaemon(ns: NsRef, argv: readonly string[], opts: { env?: Record<string, string> } = {}): Daemon {
    if (this.destroyed) throw new Error(`topology ${this.id} is destroyed`);
    const name = this.nsName(ns);
    const child = spawn(IP, ["netns", "exec", name, ...argv], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...opts.env },
    });
    const d = new DaemonImpl(child, argv, name);
    this.daemons.add(d);
    return d;
  }

  spawnHostDaemon(argv: readonly string[], opts: { env?: Record<string, string> } = {}): Daemon {
    if (this.destroyed) throw new Error(`topology ${this.id} is destroyed`);
    const [cmd, ...args] = argv;
    if (!cmd) throw new Error("spawnHostDaemon: empty argv");
    const child = spawn(cmd, args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...opts.env },
    });
    const d = new DaemonImpl(child, argv, "(root namespace)");
    this.daemons.add(d);
    return d;
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    await Promise.all([...this.daemons].map((d) => d.kill(1500)));
    // Anything else still running in our namespaces was started by this topology's tests.
    for (const name of Object.values(this.namespaces)) {
      const r = await runHost([IP, "netns", "pids", name], { timeoutMs: 5000 });
      for (const pid of r.stdout.split(/\s+/).filter(Boolean).map(Number)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // gone
        }
      }
    }
    for (const name of Object.values(this.namespaces)) {
      await runHost([IP, "netns", "del", name], { timeoutMs: 10_000 });
    }
    live.delete(this);
    const left = Object.values(this.namespaces).filter(namespaceExists);
    if (left.length > 0) throw new Error(`namespaces not deleted: ${left.join(", ")}`);
  }

  destroySync(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const d of this.daemons) d.killSync();
    for (const name of Object.values(this.namespaces)) {
      killPidsIn(name);
      spawnSync(IP, ["netns", "del", name], { timeout: 5000 });
    }
    live.delete(this);
  }
}

const POD_NAME_RE = /^[a-z][a-z0-9-]{0,7}$/;
const RESERVED = new Set(["node", "client", "client2"]);

function validate(spec: TopologySpec): void {
  const ips = new Set<string>();
  for (const p of spec.pods) {
    if (!POD_NAME_RE.test(p.name) || RESERVED.has(p.name)) throw new Error(`bad pod name ${p.name}`);
    if (!/^203\.0\.113\.(\d+)$/.test(p.ip) || p.ip === ADDR.podGateway) throw new Error(`bad pod ip ${p.ip}`);
    const last = Number(p.ip.split(".")[3]);
    if (last < 2 || last > 254) throw new Error(`bad pod ip ${p.ip}`);
    if (ips.has(p.ip)) throw new Error(`duplicate pod ip ${p.ip}`);
    ips.add(p.ip);
  }
  if (new Set(spec.pods.map((p) => p.name)).size !== spec.pods.length) throw new Error("duplicate pod names");
}

/** Builds the namespaces and links of `spec`; on any failure everything built so far is deleted. */
export async function createTopology(spec: TopologySpec): Promise<Topology> {
  validate(spec);
  if (!swept) {
    swept = true;
    sweepStaleNamespaces();
  }
  installExitHook();
  const id = `${process.pid.toString(36)}-${randomBytes(3).toString("hex")}`;
  const t = new TopologyImpl(id, spec);
  live.add(t);
  const roles = ["node", ...(spec.client !== false ? ["client"] : []), ...(spec.client2 ? ["client2"] : [])];
  for (const p of spec.pods) roles.push(p.name);
  try {
    for (const role of roles) {
      const name = `${NS_PREFIX}${id}-${role}`;
      await mustHost([IP, "netns", "add", name]);
      t.namespaces[role] = name;
      await mustHost([IP, "-n", name, "link", "set", "lo", "up"]);
    }
    const node = t.nsName("node");
    // Defaults first, so interfaces created afterwards inherit them.
    await t.must("node", [
      "sysctl",
      "-q",
      "-w",
      "net.ipv4.ip_forward=1",
      "net.ipv4.conf.all.rp_filter=0",
      "net.ipv4.conf.default.rp_filter=0",
      "net.ipv4.conf.all.send_redirects=0",
      "net.ipv4.conf.default.send_redirects=0",
    ]);

    // Sink for service and external addresses: a veth whose peer stays down (no carrier).
    await mustHost([IP, "-n", node, "link", "add", "ksink0", "type", "veth", "peer", "name", "ksink1"]);
    await mustHost([IP, "-n", node, "link", "set", "ksink0", "up"]);
    for (const net of [ADDR.serviceNet, ADDR.externalNet]) {
      await mustHost([IP, "-n", node, "route", "add", net, "dev", "ksink0"]);
    }

    const clients: [string, string, string, string][] = [];
    if (spec.client !== false) clients.push(["client", "kc1", `${ADDR.client}/26`, `${ADDR.node}/26`]);
    if (spec.client2) clients.push(["client2", "kc2", `${ADDR.client2}/26`, `${ADDR.nodeToClient2}/26`]);
    for (const [role, nodeIf, clientAddr, nodeAddr] of clients) {
      const ns = t.nsName(role);
      await mustHost([
        IP,
        "-n",
        node,
        "link",
        "add",
        nodeIf,
        "type",
        "veth",
        "peer",
        "name",
        "eth0",
        "netns",
        ns,
      ]);
      await mustHost([IP, "-n", node, "addr", "add", nodeAddr, "dev", nodeIf]);
      await mustHost([IP, "-n", node, "link", "set", nodeIf, "up"]);
      await mustHost([IP, "-n", ns, "addr", "add", clientAddr, "dev", "eth0"]);
      await mustHost([IP, "-n", ns, "link", "set", "eth0", "up"]);
      const gw = nodeAddr.split("/")[0]!;
      for (const net of ["192.0.2.0/24", ADDR.serviceNet, ADDR.podNet]) {
        await mustHost([IP, "-n", ns, "route", "add", net, "via", gw, "dev", "eth0"]);
      }
    }

    for (const p of spec.pods) {
      const ns = t.nsName(p.name);
      const nodeIf = `vp-${p.name}`;
      await mustHost([
        IP,
        "-n",
        node,
        "link",
        "add",
        nodeIf,
        "type",
        "veth",
        "peer",
        "name",
        "eth0",
        "netns",
        ns,
      ]);
      await mustHost([IP, "-n", node, "addr", "add", `${ADDR.podGateway}/32`, "dev", nodeIf]);
      await mustHost([IP, "-n", node, "link", "set", nodeIf, "up"]);
      await mustHost([IP, "-n", node, "route", "add", `${p.ip}/32`, "dev", nodeIf, "src", ADDR.podGateway]);
      await mustHost([IP, "-n", ns, "addr", "add", `${p.ip}/32`, "dev", "eth0"]);
      await mustHost([IP, "-n", ns, "link", "set", "eth0", "up"]);
      await mustHost([IP, "-n", ns, "route", "add", `${ADDR.podGateway}/32`, "dev", "eth0", "scope", "link"]);
      for (const net of ["192.0.2.0/24", ADDR.serviceNet, ADDR.podNet]) {
        await mustHost([
          IP,
          "-n",
          ns,
          "route",
          "add",
          net,
          "via",
          ADDR.podGateway,
          "dev",
          "eth0",
          "src",
          p.ip,
        ]);
      }
    }
    return t;
  } catch (err) {
    await t.destroy().catch(() => {});
    throw err;
  }
}

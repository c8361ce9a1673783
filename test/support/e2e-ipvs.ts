// IPVS views for real-kernel tests: the node namespace's virtual servers (IPVS is per network
// namespace, so ipvsadm runs in there), ipsets and kube-ipvs0, a bounded wait on them, the
// extra diagnostics an ipvs-mode failure needs, and the error lines a healthy run must not print;
// and the two Services the set-limit tests share.

import { ipvsMode } from "../../src/modes/ipvs/mode.ts";
import type { ServiceSpec } from "./e2e-cluster.ts";
import { scaled } from "./kernel-vm.ts";
import type { Daemon, Topology } from "./netns.ts";

export interface IpvsReal {
  /** "ip:port" */
  readonly address: string;
  readonly forward: string;
  readonly weight: number;
  readonly active: number;
  readonly inactive: number;
}

export interface IpvsVirtualServer {
  readonly protocol: string;
  /** "ip:port" */
  readonly address: string;
  readonly scheduler: string;
  /** Whatever follows the scheduler, e.g. "persistent 600". */
  readonly flags: string;
  readonly reals: IpvsReal[];
}

/** Parses `ipvsadm -Ln`. */
export function parseIpvsadm(text: string): IpvsVirtualServer[] {
  const out: IpvsVirtualServer[] = [];
  let current: IpvsVirtualServer | undefined;
  for (const line of text.split("\n")) {
    const vs = /^(TCP|UDP|SCTP)\s+(\S+)\s+(\S+)\s*(.*)$/.exec(line);
    if (vs) {
      current = {
        protocol: vs[1]!,
        address: vs[2]!,
        scheduler: vs[3]!,
        flags: (vs[4] ?? "").trim(),
        reals: [],
      };
      out.push(current);
      continue;
    }
    const rs = /^\s+->\s+(\d\S*)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)/.exec(line);
    if (rs && current) {
      current.reals.push({
        address: rs[1]!,
        forward: rs[2]!,
        weight: Number(rs[3]),
        active: Number(rs[4]),
        inactive: Number(rs[5]),
      });
    }
  }
  return out;
}

export interface IpvsView {
  readonly virtualServers: IpvsVirtualServer[];
  /** Raw `ipvsadm -Ln` output. */
  readonly text: string;
}

export async function ipvsView(topo: Topology): Promise<IpvsView> {
  const r = await topo.run("node", ["ipvsadm", "-Ln"], { timeoutMs: 10_000 });
  if (r.code !== 0) return { virtualServers: [], text: `ipvsadm -Ln failed (${r.code}): ${r.stderr}` };
  return { virtualServers: parseIpvsadm(r.stdout), text: r.stdout };
}

/** The virtual server `protocol address` ("TCP", "198.51.100.10:80") in a view, if present. */
export function virtualServer(v: IpvsView, protocol: string, address: string): IpvsVirtualServer | undefined {
  return v.virtualServers.find((s) => s.protocol === protocol && s.address === address);
}

/**
 * Polls `ipvsadm -Ln` in the node namespace until `ready` holds (at most timeoutMs, stretched by
 * timeScale(), every 250 ms; but never less than floorMs, for waits on kernel timers, which an
 * emulated CPU does not slow down). Fails at once, with the daemon's output, if the daemon exits.
 */
export async function waitForIpvs(
  topo: Topology,
  daemon: Daemon | undefined,
  ready: (v: IpvsView) => boolean,
  what: string,
  timeoutMs = 20_000,
  floorMs = 0,
): Promise<IpvsView> {
  const limitMs = Math.max(scaled(timeoutMs), floorMs);
  const deadline = Date.now() + limitMs;
  let last: IpvsView = { virtualServers: [], text: "" };
  for (let i = 0; i < Math.ceil(limitMs / 250) + 10; i++) {
    const code = daemon?.exitCode();
    if (code !== undefined) {
      throw new Error(
        `kube-proxy-ts exited with ${code} while waiting for ${what}\n--- stderr ---\n${daemon?.stderr()}\n--- stdout ---\n${daemon?.stdout()}`,
      );
    }
    last = await ipvsView(topo);
    if (ready(last)) return last;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(
    `timed out after ${limitMs} ms waiting for ${what}\n--- ipvsadm -Ln (node) ---\n${last.text}`,
  );
}

/** A view without connection counters: what two syncs of the same state must agree on. */
export function ipvsShape(v: IpvsView): string[] {
  return v.virtualServers
    .map(
      (s) =>
        `${s.protocol} ${s.address} ${s.scheduler} ${s.flags} -> ${s.reals
          .map((r) => `${r.address}/${r.forward}/${r.weight}`)
          .sort()
          .join(",")}`,
    )
    .sort();
}

/** Names of the KUBE- ipsets in the node namespace. */
export async function kubeIpsets(topo: Topology): Promise<string[]> {
  const r = await topo.run("node", ["ipset", "list", "-n"], { timeoutMs: 10_000 });
  return r.stdout
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.startsWith("KUBE-"));
}

/** Whether the node namespace has the kube-ipvs0 dummy device. */
export async function hasDummyDevice(topo: Topology): Promise<boolean> {
  return (await topo.run("node", ["ip", "link", "show", "kube-ipvs0"], { timeoutMs: 10_000 })).code === 0;
}

/** IPVS table, ipsets and kube-ipvs0's addresses: what a failing ipvs-mode test prints. */
export async function ipvsDiagnostics(topo: Topology): Promise<string> {
  const parts: string[] = [];
  for (const argv of [
    ["ipvsadm", "-Ln"],
    ["ipvsadm", "-Lnc"],
    ["ipset", "list"],
    ["ip", "addr", "show", "kube-ipvs0"],
  ]) {
    const r = await topo.run("node", argv, { timeoutMs: 10_000 });
    const out = `${r.stdout}${r.stderr}`.split("\n");
    parts.push(`--- ${argv.join(" ")} (node) ---`, out.slice(0, 150).join("\n"));
  }
  return parts.join("\n");
}

/**
 * klog error lines (E<MMDD> ...) a daemon printed, but for the deprecation notice every ipvs run
 * logs at error level at start (upstream 1.35).
 */
export function unexpectedErrorLines(d: Daemon): string[] {
  const deprecation = ipvsMode.deprecation?.message ?? "";
  return d
    .stderr()
    .split("\n")
    .filter((l) => /^E\d{4} /.test(l) && !(deprecation && l.includes(deprecation)));
}

/** An old Service with one endpoint (pod 203.0.113.11): it keeps its place in ipvs mode's sets. */
export const OLD_WEB: ServiceSpec = {
  name: "web",
  clusterIP: "198.51.100.10",
  ports: [{ name: "http", port: 80, targetPort: 8080 }],
  endpoints: [{ ip: "203.0.113.11" }],
  createdAt: "2020-01-01T00:00:00Z",
};

/**
 * A newer Service of `ips` external IPs from 192.0.2.128/25 (the topology's external range) with
 * `ports` ports each, every pair a member of KUBE-EXTERNAL-IP: 128 x 513 pass its 65,536.
 */
export function wideService(ips: number, ports: number): ServiceSpec {
  return {
    name: "wide",
    clusterIP: "198.51.100.20",
    externalIPs: Array.from({ length: ips }, (_, i) => `192.0.2.${128 + i}`),
    ports: Array.from({ length: ports }, (_, i) => ({ name: `p${i}`, port: 1000 + i, targetPort: 8080 })),
    createdAt: "2024-01-01T00:00:00Z",
  };
}

// Runs the real dist/kube-proxy-ts as a daemon in a topology's node namespace, reads back the
// rules it programmed, waits (bounded) for them, and gathers diagnostics when a test fails.

import { existsSync, readFileSync } from "node:fs";
import { ensureBinary } from "./binary.ts";
import { scaled } from "./kernel-vm.ts";
import type { Daemon, Topology } from "./netns.ts";

/**
 * The binary under test: dist/kube-proxy-ts (built on demand). KPTS_E2E_BINARY points the suite
 * at another build of it instead (e.g. one from another branch, to compare).
 */
export function kubeProxyBinary(): string {
  const override = process.env.KPTS_E2E_BINARY;
  if (override) {
    if (!existsSync(override)) throw new Error(`KPTS_E2E_BINARY=${override} does not exist`);
    return override;
  }
  return ensureBinary();
}

export const NODE_NAME = "node-a";

/** Where the cluster comes from: a --state file, or an API server through a kubeconfig. */
export type KubeProxySource = { readonly stateFile: string } | { readonly kubeconfig: string };

/** The proxy modes the real-kernel suites run. */
export type E2eProxyMode = "iptables" | "ipvs" | "nftables";

export type KubeProxyOptions = KubeProxySource & {
  readonly nodeName?: string;
  /** --proxy-mode; iptables unless told (ipvs needs a kernel with IPVS: test/vm). */
  readonly mode?: E2eProxyMode;
  readonly extraArgs?: readonly string[];
  /** Extra environment for the daemon (e.g. XTABLES_LOCKFILE). */
  readonly env?: Record<string, string>;
};

/** The argv of a real run (as the README documents it), in iptables mode unless `o.mode` says. */
export function kubeProxyArgv(o: KubeProxyOptions): string[] {
  return [
    kubeProxyBinary(),
    ...("stateFile" in o ? ["--state", o.stateFile] : ["--kubeconfig", o.kubeconfig]),
    "--hostname-override",
    o.nodeName ?? NODE_NAME,
    `--proxy-mode=${o.mode ?? "iptables"}`,
    "--healthz-bind-address=127.0.0.1:10256",
    "--metrics-bind-address=127.0.0.1:10249",
    // Pods live in 203.0.113.0/24 (see netns.ts).
    "--cluster-cidr=203.0.113.0/24",
    // nf_conntrack_max is global (read-only inside a namespace): leave it alone.
    "--conntrack-max-per-core=0",
    "-v=2",
    ...(o.extraArgs ?? []),
  ];
}

export function startKubeProxy(topo: Topology, o: KubeProxyOptions): Daemon {
  return topo.spawnDaemon("node", kubeProxyArgv(o), o.env ? { env: o.env } : {});
}

export type Table = "nat" | "filter" | "mangle";

/**
 * iptables-save of one table in the node namespace, from the nft backend plus, when the legacy
 * table exists in that namespace, the legacy one (so rules are found whichever backend the
 * proxy chose). Reading never creates a legacy table.
 */
export async function iptablesSave(topo: Topology, table: Table): Promise<string> {
  const nft = await topo.run("node", ["iptables-nft-save", "-t", table], { timeoutMs: 10_000 });
  let out = nft.code === 0 ? nft.stdout : "";
  const names = await topo.run("node", ["cat", "/proc/net/ip_tables_names"], { timeoutMs: 5000 });
  if (names.code === 0 && names.stdout.split("\n").includes(table)) {
    const legacy = await topo.run("node", ["iptables-legacy-save", "-t", table], { timeoutMs: 10_000 });
    if (legacy.code === 0) out += legacy.stdout;
  }
  return out;
}

export interface RulesView {
  readonly nat: string;
  readonly filter: string;
}

export async function rulesView(topo: Topology): Promise<RulesView> {
  const [nat, filter] = await Promise.all([iptablesSave(topo, "nat"), iptablesSave(topo, "filter")]);
  return { nat, filter };
}

/**
 * Polls the node's rules until `ready` holds (at most timeoutMs, stretched by timeScale(), every
 * 200 ms). Fails at once,
 * with the daemon's output, if the daemon exits meanwhile.
 */
export async function waitForRules(
  topo: Topology,
  daemon: Daemon | undefined,
  ready: (v: RulesView) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<RulesView> {
  const limitMs = scaled(timeoutMs);
  const deadline = Date.now() + limitMs;
  let last: RulesView = { nat: "", filter: "" };
  for (let i = 0; i < scaled(1000); i++) {
    const code = daemon?.exitCode();
    if (code !== undefined) {
      throw new Error(
        `kube-proxy-ts exited with ${code} while waiting for ${what}\n--- stderr ---\n${daemon?.stderr()}\n--- stdout ---\n${daemon?.stdout()}`,
      );
    }
    last = await rulesView(topo);
    if (ready(last)) return last;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(
    `timed out after ${limitMs} ms waiting for ${what}\n--- nat ---\n${last.nat}\n--- filter ---\n${last.filter}\n--- kube-proxy-ts stderr (tail) ---\n${tail(daemon?.stderr() ?? "", 80)}`,
  );
}

/** The KUBE-SERVICES jump from PREROUTING and the rule for `comment` (e.g. "default/web:http cluster IP"). */
export function hasServiceRule(nat: string, comment: string): boolean {
  return (
    /-A PREROUTING .*-j KUBE-SERVICES/.test(nat) &&
    nat.split("\n").some((l) => l.startsWith("-A KUBE-SERVICES ") && l.includes(`"${comment}"`))
  );
}

/** Number of `-A <chain> ` rules. */
export function ruleCount(save: string, chain: string): number {
  return save.split("\n").filter((l) => l.startsWith(`-A ${chain} `)).length;
}

function tail(text: string, lines: number): string {
  return text.split("\n").slice(-lines).join("\n");
}

/** Daemon output and the node's rules, for a failing test's message. */
export async function diagnostics(
  topo: Topology,
  daemon: Daemon | undefined,
  stateFile?: string,
): Promise<string> {
  const parts: string[] = [];
  if (daemon) {
    parts.push(`--- kube-proxy-ts (exit ${daemon.exitCode() ?? "running"}) stderr (tail) ---`);
    parts.push(tail(daemon.stderr(), 150));
    if (daemon.stdout()) parts.push("--- stdout (tail) ---", tail(daemon.stdout(), 50));
  }
  try {
    const save = await topo.run("node", ["iptables-save"], { timeoutMs: 10_000 });
    parts.push("--- iptables-save (node) ---", save.stdout, save.stderr);
    const legacy = await topo.run("node", ["cat", "/proc/net/ip_tables_names"], { timeoutMs: 5000 });
    if (legacy.stdout.trim()) {
      const l = await topo.run("node", ["iptables-legacy-save"], { timeoutMs: 10_000 });
      parts.push("--- iptables-legacy-save (node) ---", l.stdout);
    }
    const ct = await topo.run("node", ["conntrack", "-L"], { timeoutMs: 5000 });
    parts.push("--- conntrack -L (node, tail) ---", tail(ct.stdout, 40));
  } catch (err) {
    parts.push(`(diagnostics failed: ${err instanceof Error ? err.message : String(err)})`);
  }
  if (stateFile && existsSync(stateFile)) parts.push("--- state file ---", readFileSync(stateFile, "utf8"));
  return parts.join("\n");
}

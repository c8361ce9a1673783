// Replays what one recorded sync asked for against the REAL tools inside one network namespace
// the test creates (and deletes): the iptables/ip6tables restore inputs, nfacct, ipset, `ip` and
// `nft -f`, each exactly as recorded (argv and stdin, no shell). The namespace is shared by a
// whole property run and emptied between cases, so a run spawns a few processes per case rather
// than a namespace per case. Not replayed: the iptables command lines (-N and the jumps from the
// built-in chains: fixed text, two dozen processes a case; the restore inputs declare every chain
// they use, and the grammar checks hold those lines), ipvsadm unless asked for (this host has no
// IPVS; its inputs are held to the in-repo parser here and replayed in the kernel VM) and
// conntrack (nothing to delete on a fresh node).

import { spawnSync } from "node:child_process";
import type { RecordedCommand } from "../../src/exec/dry-run.ts";
import type { ModeName } from "../../src/modes/registry.ts";
import { createTestNetns, type TestNetns } from "../host/iptables/netns.ts";
import { type ClusterObjects, IPTABLES_RESTORE, programOf, syncOnce } from "./hostile-sync.ts";

/** The tools the replay needs, by the name the proxiers call them. */
export const REAL_TOOLS = [
  "iptables-nft-restore",
  "ip6tables-nft-restore",
  "nft",
  "ipset",
  "nfacct",
  "ip",
  "sh",
];

/** Throws, naming them, when tools the replay needs are not installed (the test must fail, not skip). */
export function requireRealTools(tools: readonly string[] = REAL_TOOLS): void {
  const missing = tools.filter(
    (t) => spawnSync("sh", ["-c", `command -v ${t}`], { encoding: "utf8", timeout: 5000 }).status !== 0,
  );
  if (missing.length > 0)
    throw new Error(
      `the real-tool check needs ${missing.join(", ")}, which this host does not have installed`,
    );
}

const REPLAYED = (p: string) => IPTABLES_RESTORE.test(p) || ["nfacct", "ipset", "ip", "nft"].includes(p);

export interface RealHostOptions {
  /** Replay ipvsadm too (a kernel with IPVS: the VM guest). */
  readonly ipvsadm?: boolean;
}

// The ipvs match needs the ip_vs module, which this host's kernel lacks; where a probe shows that,
// the match (addresses and ports only, nothing from a name) is cut from the line before replay.
const IPVS_MATCH = / -m ipvs(?: --v(?:addr|proto|port|dir|method) \S+)+/g;
const IPVS_PROBE =
  "*filter\n:KUBE-PROBE - [0:0]\n-A KUBE-PROBE -m ipvs --vaddr 192.0.2.1 -j ACCEPT\nCOMMIT\n";

const DUMMY = ["ip", "link", "add", "name", "kube-ipvs0", "type", "dummy"];
/** Where the kernel has no dummy devices, a veth pair stands in for kube-ipvs0 (same addresses). */
const VETH = ["ip", "link", "add", "kube-ipvs0", "type", "veth", "peer", "name", "kpts-ipvs-peer"];

/** The input lines a tool's "line N" message points at, with one line of context each side. */
function pointedLines(stdin: string | undefined, message: string): string {
  if (!stdin) return "";
  const lines = stdin.split("\n");
  const out: string[] = [];
  for (const m of message.matchAll(/(?:line:? |stdin:)(\d+)/g)) {
    const n = Number(m[1]);
    for (let k = Math.max(1, n - 1); k <= Math.min(lines.length, n + 1); k++)
      out.push(`  ${k}: ${JSON.stringify(lines[k - 1]).slice(0, 400)}`);
  }
  return out.length ? `\n${out.join("\n")}` : "";
}

// Empties what a replay can leave: the nft ruleset (iptables-nft's tables included), then the
// ipsets and nfacct objects (no longer referenced), then the dummy device. Our namespace only.
const RESET =
  "nft flush ruleset; ipset destroy 2>/dev/null; nfacct flush 2>/dev/null; ip link del kube-ipvs0 2>/dev/null; exit 0";
// With IPVS, the virtual servers go first (they hold nothing the others need).
const RESET_IPVS = `ipvsadm -C; ${RESET}`;

export interface RealHost {
  readonly netns: TestNetns;
  /**
   * Runs the recorded commands in order; returns the first refusal (argv, exit code, the tool's
   * message and the input lines it names), or undefined when every command succeeded.
   */
  replay(commands: readonly RecordedCommand[]): Promise<string | undefined>;
  /** Empties the namespace for the next case; throws if something stays behind. */
  reset(): Promise<void>;
  remove(): Promise<void>;
}

export async function createRealHost(opts: RealHostOptions = {}): Promise<RealHost> {
  requireRealTools(opts.ipvsadm ? [...REAL_TOOLS, "ipvsadm"] : REAL_TOOLS);
  const replayed = (p: string) => REPLAYED(p) || (opts.ipvsadm === true && p === "ipvsadm");
  const netns = await createTestNetns();
  // As on any node, lo is up: without it IPVS refuses every real server ("not unicast").
  await netns.exec.run({ cmd: "ip", args: ["link", "set", "lo", "up"] });
  const probe = await netns.exec.run({ cmd: "ip", args: DUMMY.slice(1) });
  if (probe.code === 0) await netns.exec.run({ cmd: "ip", args: ["link", "del", "kube-ipvs0"] });
  const dummyDevice = probe.code === 0 ? DUMMY : VETH;
  // Applied, not --test: only the kernel knows whether it has the match.
  const ipvsProbe = await netns.exec.run({
    cmd: "iptables-nft-restore",
    args: ["--noflush"],
    stdin: IPVS_PROBE,
  });
  await netns.exec.run({ cmd: "nft", args: ["flush", "ruleset"] });
  const withoutIpvsMatch = (c: RecordedCommand) =>
    ipvsProbe.code === 0 || !IPTABLES_RESTORE.test(programOf(c)) ? c.stdin : c.stdin?.replace(IPVS_MATCH, "");
  return {
    netns,
    async replay(commands) {
      // The dry run records an "ensure" (-N, nfacct add) each time it is asked, since nothing
      // it records is applied; the real tool would refuse the repeat, so each runs once.
      const once = new Set<string>();
      for (const c of commands) {
        const program = programOf(c);
        if (!replayed(program)) continue;
        if (c.stdin === undefined) {
          const key = JSON.stringify(c.argv);
          if (once.has(key)) continue;
          once.add(key);
        }
        const argv = JSON.stringify(c.argv) === JSON.stringify(DUMMY) ? dummyDevice : c.argv;
        const r = await netns.exec.run({
          cmd: argv[0]!,
          args: argv.slice(1),
          ...(c.stdin !== undefined ? { stdin: withoutIpvsMatch(c) } : {}),
        });
        if (r.code !== 0) {
          const message = `${r.stderr}${r.stdout}`.trim();
          return `${c.argv.join(" ")} exited ${r.code}: ${message.slice(0, 600)}${pointedLines(c.stdin, message)}`;
        }
      }
      return undefined;
    },
    async reset() {
      const r = await netns.exec.run({ cmd: "sh", args: ["-c", opts.ipvsadm ? RESET_IPVS : RESET] });
      if (r.code !== 0) throw new Error(`resetting ${netns.name} failed: ${r.stderr}`);
      // ipvsadm -Sn prints nothing for an empty table.
      const list = opts.ipvsadm
        ? "nft list ruleset; ipset list -n; ipvsadm -Sn"
        : "nft list ruleset; ipset list -n";
      const left = await netns.exec.run({ cmd: "sh", args: ["-c", list] });
      if (left.stdout.trim() !== "")
        throw new Error(`${netns.name} is not empty after a reset:\n${left.stdout}`);
    },
    remove: () => netns.remove(),
  };
}

/**
 * One sync of `cluster` in `mode`, replayed on `host` and then undone: the commands it wrote, or
 * undefined when the sync threw (another property's failure; nothing was written). Throws when
 * the real tools refused a command.
 */
export async function syncAndReplay(
  host: RealHost,
  mode: ModeName,
  cluster: ClusterObjects,
): Promise<readonly RecordedCommand[] | undefined> {
  let commands: readonly RecordedCommand[];
  try {
    commands = (await syncOnce(mode, cluster)).commands;
  } catch {
    return undefined;
  }
  try {
    const refused = await host.replay(commands);
    if (refused) throw new Error(refused);
  } finally {
    await host.reset();
  }
  return commands;
}

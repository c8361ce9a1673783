// Which iptables backend this node uses. kube-proxy must program the same backend as the
// kubelet (and the CNI), or its rules sit in a rule set the packets never see. Detection follows
// kubernetes-sigs/iptables-wrappers: the kubelet's marker chains first, then whichever backend
// holds more rules, else nft.

import type { Exec, ExecResult } from "../../exec/types.ts";
import type { Logger } from "../../log/logger.ts";
import { countRuleLines, parseIptablesSave } from "./save-parser.ts";
import type { IptablesBackend } from "./types.ts";

/** The --iptables-backend flag: a backend, or "auto" to detect. */
export type BackendPreference = IptablesBackend | "auto";

export interface BackendChoice {
  readonly backend: IptablesBackend;
  /** One sentence for the startup log saying why. */
  readonly reason: string;
}

/** Chains the kubelet (1.17+) creates in the mangle table of the backend it uses. */
export const KUBELET_MARKER_CHAINS = ["KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY"] as const;

const SAVE_TIMEOUT_MS = 10_000;
const NOT_FOUND = 127;

interface Dump {
  readonly installed: boolean;
  readonly text: string;
}

async function dump(exec: Exec, cmd: string, args: string[]): Promise<Dump> {
  const res: ExecResult = await exec.run({ cmd, args, timeoutMs: SAVE_TIMEOUT_MS });
  return { installed: res.code !== NOT_FOUND, text: res.code === 0 ? res.stdout : "" };
}

function markerIn(text: string): string | undefined {
  if (text === "") return undefined;
  const tables = parseIptablesSave(text);
  for (const table of tables.values()) {
    for (const chain of KUBELET_MARKER_CHAINS) if (table.chains.has(chain)) return chain;
  }
  return undefined;
}

export async function detectBackend(
  exec: Exec,
  logger: Logger,
  preference: BackendPreference = "auto",
): Promise<BackendChoice> {
  const log = logger.named("iptables");
  if (preference !== "auto") {
    const probe = await exec.run({
      cmd: `iptables-${preference}`,
      args: ["--version"],
      timeoutMs: SAVE_TIMEOUT_MS,
    });
    const missing = probe.code === NOT_FOUND ? ` (warning: iptables-${preference} is not installed)` : "";
    return { backend: preference, reason: `--iptables-backend=${preference}${missing}` };
  }

  // nft first: "-t mangle" is cheap there and nft is the common case today.
  const [nft4, nft6] = await Promise.all([
    dump(exec, "iptables-nft-save", ["-t", "mangle"]),
    dump(exec, "ip6tables-nft-save", ["-t", "mangle"]),
  ]);
  for (const [family, d] of [
    ["iptables", nft4],
    ["ip6tables", nft6],
  ] as const) {
    const chain = markerIn(d.text);
    if (chain)
      return { backend: "nft", reason: `kubelet chain ${chain} found in ${family}-nft mangle table` };
  }

  // Legacy is dumped whole: "-t mangle" would make the kernel create the table as a side effect.
  const [legacy4, legacy6] = await Promise.all([
    dump(exec, "iptables-legacy-save", []),
    dump(exec, "ip6tables-legacy-save", []),
  ]);
  for (const [family, d] of [
    ["iptables", legacy4],
    ["ip6tables", legacy6],
  ] as const) {
    const chain = markerIn(d.text);
    if (chain) return { backend: "legacy", reason: `kubelet chain ${chain} found in ${family}-legacy rules` };
  }

  const nftInstalled = nft4.installed || nft6.installed;
  const legacyInstalled = legacy4.installed || legacy6.installed;
  if (!nftInstalled && legacyInstalled)
    return { backend: "legacy", reason: "only iptables-legacy is installed" };
  if (!legacyInstalled && nftInstalled) return { backend: "nft", reason: "only iptables-nft is installed" };
  if (!legacyInstalled && !nftInstalled) {
    log.warn("Neither iptables-nft nor iptables-legacy is installed; assuming nft");
    return { backend: "nft", reason: "no iptables binaries found; defaulting to nft" };
  }

  // No kubelet markers (an old kubelet, or none yet): go where the existing rules are.
  const [nftAll4, nftAll6] = await Promise.all([
    dump(exec, "iptables-nft-save", []),
    dump(exec, "ip6tables-nft-save", []),
  ]);
  const legacyRules = countRuleLines(legacy4.text) + countRuleLines(legacy6.text);
  const nftRules = countRuleLines(nftAll4.text) + countRuleLines(nftAll6.text);
  if (legacyRules > nftRules) {
    return {
      backend: "legacy",
      reason: `no kubelet chains; legacy holds more rules (${legacyRules} vs ${nftRules})`,
    };
  }
  return {
    backend: "nft",
    reason: `no kubelet chains; legacy does not hold more rules than nft (${legacyRules} vs ${nftRules}), defaulting to nft`,
  };
}

// Reads the live host into a HostState document for --dump-state: everything a bug report
// needs to reproduce a plan elsewhere. Read-only commands only; a missing tool is left out.

import type { Exec } from "../../exec/types.ts";
import type { IpsetClient } from "../ipset/types.ts";
import { parseIptablesVersion } from "../iptables/version.ts";
import type { KernelClient } from "../kernel/types.ts";
import type { HostState } from "./schema.ts";

async function output(exec: Exec, cmd: string, args: string[]): Promise<string | undefined> {
  const r = await exec.run({ cmd, args, timeoutMs: 30_000 });
  return r.code === 0 ? r.stdout : undefined;
}

/** `ip -o addr show` lines: "2: eth0    inet 192.0.2.10/24 brd ... scope global eth0". */
export function parseIpAddrOneline(text: string): { name: string; addresses: string[] }[] {
  const byName = new Map<string, string[]>();
  for (const line of text.split("\n")) {
    const m = /^\d+:\s+(\S+)\s+inet6?\s+(\S+)/.exec(line);
    if (!m) continue;
    const name = (m[1] ?? "").replace(/@.*$/, "");
    const list = byName.get(name) ?? [];
    list.push(m[2] ?? "");
    byName.set(name, list);
  }
  return [...byName].map(([name, addresses]) => ({ name, addresses }));
}

export async function probeHostState(
  exec: Exec,
  kernel: KernelClient,
  ipset: IpsetClient,
): Promise<HostState> {
  const modules = await kernel.modules();
  const ipsetVersion = await ipset.version();
  // Normalised to the form HostState accepts back ("iptables v1.8.9 (legacy)").
  const iptablesInfo = parseIptablesVersion((await output(exec, "iptables", ["--version"])) ?? "");
  const iptablesVersion = iptablesInfo
    ? `iptables v${iptablesInfo.version}${iptablesInfo.mode ? ` (${iptablesInfo.mode})` : ""}`
    : undefined;
  const nftVersion = /^nftables v(\d+(?:\.\d+)+)/.exec((await output(exec, "nft", ["--version"])) ?? "")?.[1];
  const addrs = await output(exec, "ip", ["-o", "addr", "show"]);
  const [iptablesSave, ip6tablesSave, ipsetSave, ipvsSave] = await Promise.all([
    output(exec, "iptables-save", []),
    output(exec, "ip6tables-save", []),
    output(exec, "ipset", ["save"]),
    output(exec, "ipvsadm", ["-S", "-n"]),
  ]);
  const nfacct = (await exec.run({ cmd: "nfacct", args: ["list"], timeoutMs: 10_000 })).code === 0;
  return {
    apiVersion: "kube-proxy-ts/v1",
    kind: "HostState",
    kernelVersion: await kernel.version(),
    modules: [...new Set([...modules.loaded, ...modules.builtin])].sort(),
    ...(ipsetVersion.ok ? { ipsetVersion: ipsetVersion.version } : {}),
    ...(iptablesVersion ? { iptablesVersion } : {}),
    ...(nftVersion ? { nftVersion } : {}),
    nfacct,
    ...(addrs !== undefined ? { interfaces: parseIpAddrOneline(addrs) } : {}),
    ...(iptablesSave !== undefined ? { iptablesSave } : {}),
    ...(ip6tablesSave !== undefined ? { ip6tablesSave } : {}),
    ...(ipsetSave !== undefined ? { ipsetSave } : {}),
    ...(ipvsSave !== undefined ? { ipvsSave } : {}),
  };
}

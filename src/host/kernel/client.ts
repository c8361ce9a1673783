// Kernel facts the mode checks need: the release string and which modules are present.
// Everything is read from files under a configurable root, so a DaemonSet with the host's
// / mounted at /host (and tests with a fixture tree) see the node's kernel, not the image's.

import { readFile } from "node:fs/promises";
import { release as runningKernelRelease } from "node:os";
import { join } from "node:path";
import type { Exec } from "../../exec/types.ts";
import { KernelError } from "./errors.ts";
import type { KernelClient, KernelModules, ModuleResult } from "./types.ts";

/** Module names use "_" in /proc/modules while file names may use "-"; compare one form. */
export function normalizeModuleName(name: string): string {
  return name.replace(/-/g, "_");
}

/** "kernel/net/netfilter/ipvs/ip_vs.ko.zst" -> "ip_vs". */
export function moduleNameFromPath(path: string): string {
  const file = path.slice(path.lastIndexOf("/") + 1);
  return normalizeModuleName(file.replace(/\.ko(\.(xz|zst|gz))?$/, ""));
}

/** First column of each /proc/modules line. */
export function parseProcModules(text: string): Set<string> {
  const out = new Set<string>();
  for (const line of text.split("\n")) {
    const name = line.trim().split(/\s+/)[0];
    if (name) out.add(normalizeModuleName(name));
  }
  return out;
}

export function parseModulesBuiltin(text: string): Set<string> {
  const out = new Set<string>();
  for (const line of text.split("\n")) {
    const path = line.trim();
    if (path) out.add(moduleNameFromPath(path));
  }
  return out;
}

// Config symbols whose module name cannot be derived mechanically, plus the IPVS family.
const CONFIG_MODULES: Readonly<Record<string, string>> = {
  IP_VS: "ip_vs",
  ...Object.fromEntries(
    ["RR", "WRR", "SH", "LC", "WLC", "LBLC", "LBLCR", "DH", "SED", "NQ", "MH", "FO", "OVF"].map((s) => [
      `IP_VS_${s}`,
      `ip_vs_${s.toLowerCase()}`,
    ]),
  ),
  NF_CONNTRACK: "nf_conntrack",
  NF_CONNTRACK_IPV4: "nf_conntrack_ipv4",
  NF_CONNTRACK_IPV6: "nf_conntrack_ipv6",
  NF_NAT: "nf_nat",
  IP_SET: "ip_set",
  IP_NF_IPTABLES: "ip_tables",
  IP6_NF_IPTABLES: "ip6_tables",
  IP_NF_NAT: "iptable_nat",
  IP_NF_FILTER: "iptable_filter",
  NF_TABLES: "nf_tables",
  BRIDGE_NETFILTER: "br_netfilter",
  DUMMY: "dummy",
};

/** "CONFIG_IP_VS=y" -> built-in ip_vs; "=m" -> loadable. Unknown symbols are ignored. */
export function parseKernelConfig(text: string): { builtin: Set<string>; loadable: Set<string> } {
  const builtin = new Set<string>();
  const loadable = new Set<string>();
  for (const line of text.split("\n")) {
    const m = /^CONFIG_([A-Z0-9_]+)=([ym])\s*$/.exec(line.trim());
    const name = m ? CONFIG_MODULES[m[1]!] : undefined;
    if (!m || !name) continue;
    (m[2] === "y" ? builtin : loadable).add(name);
  }
  return { builtin, loadable };
}

// Missing or unreadable files are normal (minimal images, no /boot): absence is the answer.
async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch {
    return undefined;
  }
}

export interface KernelClientOptions {
  exec: Exec;
  /** Filesystem root the host's /proc, /lib/modules and /boot live under. */
  root?: string;
  /** The running kernel's release when osrelease is unreadable; defaults to node:os release(). */
  osRelease?: () => string;
}

const MODPROBE_TIMEOUT_MS = 30_000;

export function createKernelClient({
  exec,
  root = "/",
  osRelease = runningKernelRelease,
}: KernelClientOptions): KernelClient {
  const path = (...parts: string[]) => join(root, ...parts);

  async function version(): Promise<string> {
    const release = (await readOptional(path("proc/sys/kernel/osrelease")))?.trim();
    if (release) return release;
    // Without /proc (unusual chroots) the uname(2) system call still answers. No process is
    // started for it: the release image is FROM scratch and has no uname binary.
    const fromSyscall = osRelease().trim();
    if (fromSyscall) return fromSyscall;
    throw new KernelError(
      `cannot determine kernel version: ${path("proc/sys/kernel/osrelease")} unreadable and uname(2) gave no release`,
    );
  }

  async function modules(): Promise<KernelModules> {
    const result: KernelModules = { loaded: new Set(), builtin: new Set(), loadable: new Set(), sources: [] };
    const read = async (file: string) => {
      const text = await readOptional(file);
      if (text !== undefined) result.sources.push(file);
      return text;
    };
    const ver = await version().catch(() => undefined);

    const procModules = await read(path("proc/modules"));
    if (procModules !== undefined) result.loaded = parseProcModules(procModules);
    if (ver === undefined) return result;

    const builtinList = await read(path("lib/modules", ver, "modules.builtin"));
    if (builtinList !== undefined) result.builtin = parseModulesBuiltin(builtinList);

    if (procModules === undefined) {
      // No /proc/modules (e.g. a sandbox): the build config still says what could work.
      const config = await read(path("boot", `config-${ver}`));
      if (config !== undefined) {
        const parsed = parseKernelConfig(config);
        for (const m of parsed.builtin) result.builtin.add(m);
        result.loadable = parsed.loadable;
      }
    }
    return result;
  }

  async function modprobe(args: string[], name: string, okDetail: string): Promise<ModuleResult> {
    const res = await exec.run({
      cmd: "modprobe",
      args: [...args, "--", name],
      timeoutMs: MODPROBE_TIMEOUT_MS,
    });
    if (res.code === 0) return { ok: true, detail: okDetail };
    if (res.code === 127) return { ok: false, detail: `modprobe is not installed; cannot load ${name}` };
    if (res.timedOut) return { ok: false, detail: `modprobe ${name} timed out` };
    const why = res.stderr.trim() || res.stdout.trim() || `exit code ${res.code}`;
    return { ok: false, detail: `modprobe ${name} failed: ${why}` };
  }

  return {
    version,
    modules,
    loadModule: (name) => modprobe([], name, `loaded module ${name}`),
    probeModule: (name) => modprobe(["-n", "-q"], name, `module ${name} is available`),
  };
}

// Kernel tunables read and written as files under <root>/proc/sys (and nf_conntrack's hashsize
// under <root>/sys), so a containerised proxy can point at the host's /proc and tests can point
// at a temp directory.

import { constants } from "node:fs";
import { readFile, readlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SysctlError } from "./errors.ts";
import {
  CONNTRACK_HASHSIZE_PATH,
  type ConntrackHashsizeClient,
  type SysctlClient,
  type SysctlClientOptions,
} from "./types.ts";

/**
 * Accepts "net/ipv4/ip_forward" or "net.ipv4.ip_forward". Dotted names are converted only when
 * they contain no "/", since interface names inside slash paths may hold dots ("eth0.100").
 */
export function normalizeSysctlName(name: string): string {
  const path = name.includes("/") ? name : name.replace(/\./g, "/");
  const parts = path.split("/");
  // Refuse anything that could step outside proc/sys.
  if (parts.some((p) => p === "" || p === "." || p === "..")) {
    throw new SysctlError(name, `invalid sysctl name ${JSON.stringify(name)}`);
  }
  return path;
}

/** A sysctl value as an integer; raises SysctlError when it is not one. */
export function parseIntValue(name: string, raw: string): number {
  if (!/^-?\d+$/.test(raw)) {
    throw new SysctlError(name, `sysctl ${name} is ${JSON.stringify(raw)}, not an integer`, raw);
  }
  return Number(raw);
}

/**
 * Sysctl directories that appear only once a module is loaded; a write there failing with ENOENT
 * usually means the module is missing, which the bare error does not say.
 */
const MODULE_OF_SYSCTL_DIR: readonly (readonly [string, string])[] = [
  ["net/netfilter/nf_conntrack", "nf_conntrack"],
  ["net/ipv4/vs/", "ip_vs"],
  ["net/bridge/", "br_netfilter"],
];

function missingSysctlHint(name: string): string {
  const path = normalizeSysctlName(name);
  const mod = MODULE_OF_SYSCTL_DIR.find(([dir]) => path.startsWith(dir))?.[1];
  return mod
    ? ` (the kernel has no such sysctl: is the ${mod} module loaded?)`
    : " (the kernel has no such sysctl)";
}

export function createSysctlClient({ root = "/" }: SysctlClientOptions = {}): SysctlClient {
  const file = (name: string) => join(root, "proc/sys", normalizeSysctlName(name));

  async function get(name: string): Promise<string | undefined> {
    try {
      return (await readFile(file(name), "utf8")).trim();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      if (err instanceof SysctlError) throw err;
      throw new SysctlError(name, `cannot read sysctl ${name}: ${(err as Error).message}`, undefined, {
        cause: err,
      });
    }
  }

  return {
    get,
    async getInt(name) {
      const raw = await get(name);
      return raw === undefined ? undefined : parseIntValue(name, raw);
    },
    async set(name, value) {
      const text = String(value);
      try {
        // No O_CREAT: a sysctl the kernel lacks must fail, as it would on a real /proc.
        await writeFile(file(name), `${text}\n`, { flag: constants.O_WRONLY | constants.O_TRUNC });
      } catch (err) {
        if (err instanceof SysctlError) throw err;
        const hint = (err as NodeJS.ErrnoException).code === "ENOENT" ? missingSysctlHint(name) : "";
        throw new SysctlError(
          name,
          `cannot set sysctl ${name}=${text}: ${(err as Error).message}${hint}`,
          text,
          {
            cause: err,
          },
        );
      }
    },
  };
}

export function createConntrackHashsizeClient({
  root = "/",
}: SysctlClientOptions = {}): ConntrackHashsizeClient {
  const file = join(root, CONNTRACK_HASHSIZE_PATH);
  const readOrUndefined = async (path: string) => {
    try {
      return await readFile(path, "utf8");
    } catch {
      return undefined;
    }
  };
  return {
    async get() {
      const raw = (await readOrUndefined(file))?.trim();
      return raw === undefined ? undefined : parseIntValue(CONNTRACK_HASHSIZE_PATH, raw);
    },
    async set(value) {
      try {
        await writeFile(file, `${value}\n`, { flag: constants.O_WRONLY | constants.O_TRUNC });
      } catch (err) {
        const msg = `cannot set ${CONNTRACK_HASHSIZE_PATH}=${value}: ${(err as Error).message}`;
        throw new SysctlError(CONNTRACK_HASHSIZE_PATH, msg, String(value), { cause: err });
      }
    },
    async inInitialNetns() {
      try {
        const [self, init] = await Promise.all([
          readlink(join(root, "proc/self/ns/net")),
          readlink(join(root, "proc/1/ns/net")),
        ]);
        return self === init;
      } catch {
        // PID 1's namespace links need privileges we may lack: then the write's errno decides.
        return undefined;
      }
    },
    async sysfsWritable() {
      const mounts = await readOrUndefined(join(root, "proc/mounts"));
      const sysfs = mounts?.split("\n").find((l) => l.split(" ")[2] === "sysfs");
      if (!sysfs) return undefined;
      return (sysfs.split(" ")[3] ?? "").split(",")[0] === "rw";
    },
  };
}

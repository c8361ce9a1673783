// Kernel tunables read and written as files under <root>/proc/sys (and nf_conntrack's hashsize
// under <root>/sys), so a containerised proxy can point at the host's /proc and tests can point
// at a temp directory.

import { constants } from "node:fs";
import { readFile, readlink, writeFile } from "node:fs/promises";
import { join } from "node:path";

export interface SysctlClient {
  /** The value with surrounding whitespace removed; undefined when the sysctl does not exist. */
  get(name: string): Promise<string | undefined>;
  /** As get, parsed as an integer; raises SysctlError when the value is not one. */
  getInt(name: string): Promise<number | undefined>;
  set(name: string, value: number | string): Promise<void>;
}

export class SysctlError extends Error {
  override readonly name = "SysctlError";
  constructor(
    readonly sysctl: string,
    message: string,
    readonly value?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

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

function parseIntValue(name: string, raw: string): number {
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

export interface SysctlClientOptions {
  /** Filesystem root holding proc/sys. */
  root?: string;
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

export interface FakeSysctlOptions {
  /** Names whose writes fail, like a read-only /proc/sys in an unprivileged container. */
  readOnly?: Iterable<string>;
}

export interface FakeSysctl extends SysctlClient {
  readonly values: Map<string, string>;
  /** Every successful write, in order. */
  readonly writes: { name: string; value: string }[];
}

/** In-memory sysctls; names are stored in slash form. */
export function createFakeSysctl(
  initial: Record<string, string | number> = {},
  opts: FakeSysctlOptions = {},
): FakeSysctl {
  const values = new Map<string, string>();
  for (const [name, value] of Object.entries(initial)) values.set(normalizeSysctlName(name), String(value));
  const readOnly = new Set([...(opts.readOnly ?? [])].map(normalizeSysctlName));
  const writes: { name: string; value: string }[] = [];

  const get = async (name: string) => values.get(normalizeSysctlName(name));
  return {
    values,
    writes,
    get,
    async getInt(name) {
      const raw = await get(name);
      return raw === undefined ? undefined : parseIntValue(name, raw);
    },
    async set(name, value) {
      const key = normalizeSysctlName(name);
      const text = String(value);
      if (readOnly.has(key)) {
        throw new SysctlError(name, `cannot set sysctl ${name}=${text}: read-only file system`, text);
      }
      values.set(key, text);
      writes.push({ name: key, value: text });
    },
  };
}

/** nf_conntrack's hash table size: a module parameter, not a sysctl, under <root>/sys. */
export const CONNTRACK_HASHSIZE_PATH = "/sys/module/nf_conntrack/parameters/hashsize";

/**
 * nf_conntrack's hashsize and the two facts that decide whether it may be written: the kernel
 * accepts writes only from the initial network namespace, and /sys may be mounted read-only.
 */
export interface ConntrackHashsizeClient {
  /** undefined when nf_conntrack is not loaded (no parameter file). */
  get(): Promise<number | undefined>;
  /** Raises SysctlError; its cause carries the errno (EOPNOTSUPP outside the initial netns). */
  set(value: number): Promise<void>;
  /** Whether this process shares PID 1's network namespace; undefined when that cannot be read. */
  inInitialNetns(): Promise<boolean | undefined>;
  /** Whether sysfs is mounted read-write (/proc/mounts); undefined when no sysfs is listed. */
  sysfsWritable(): Promise<boolean | undefined>;
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

export interface FakeConntrackHashsize extends ConntrackHashsizeClient {
  value: number | undefined;
  readonly writes: number[];
}

/** In-memory hashsize; `initialNetns: false` makes writes fail with EOPNOTSUPP, as the kernel does. */
export function createFakeConntrackHashsize(
  opts: { value?: number; initialNetns?: boolean; sysfsWritable?: boolean } = {},
): FakeConntrackHashsize {
  const fake: FakeConntrackHashsize = {
    value: opts.value,
    writes: [],
    get: async () => fake.value,
    async set(value) {
      if (opts.initialNetns === false || opts.sysfsWritable === false) {
        const code = opts.initialNetns === false ? "EOPNOTSUPP" : "EROFS";
        const cause = Object.assign(new Error(code), { code });
        throw new SysctlError(
          CONNTRACK_HASHSIZE_PATH,
          `cannot set ${CONNTRACK_HASHSIZE_PATH}: ${code}`,
          String(value),
          {
            cause,
          },
        );
      }
      fake.value = value;
      fake.writes.push(value);
    },
    inInitialNetns: async () => opts.initialNetns,
    sysfsWritable: async () => opts.sysfsWritable ?? true,
  };
  return fake;
}

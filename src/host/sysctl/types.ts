// What the sysctl clients offer: kernel tunables under <root>/proc/sys, and nf_conntrack's
// hashsize module parameter under <root>/sys.

export interface SysctlClient {
  /** The value with surrounding whitespace removed; undefined when the sysctl does not exist. */
  get(name: string): Promise<string | undefined>;
  /** As get, parsed as an integer; raises SysctlError when the value is not one. */
  getInt(name: string): Promise<number | undefined>;
  set(name: string, value: number | string): Promise<void>;
}

export interface SysctlClientOptions {
  /** Filesystem root holding proc/sys. */
  root?: string;
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

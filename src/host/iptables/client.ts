// The real IptablesClient: runs the chosen backend's binaries through Exec with upstream's
// argument order (`-w 5 -N CHAIN -t TABLE`), and turns failures into typed errors.

import type { Exec, ExecResult } from "../../exec/types.ts";
import { type Logger, nullLogger } from "../../log/logger.ts";
import type { IPFamily } from "../../util/net/family.ts";
import { versionAtLeast } from "../../util/version.ts";
import { type IptablesCommands, iptablesCommands } from "./commands.ts";
import { IptablesError, IptablesRestoreError } from "./errors.ts";
import {
  type IptablesBackend,
  type IptablesClient,
  type RestoreInput,
  type RestoreOptions,
  type RulePosition,
  restoreInputLength,
  type Table,
} from "./types.ts";
import {
  iptablesWaitFlags,
  MIN_CHECK_VERSION,
  parseIptablesVersion,
  restoreWaitFlags,
  supportsRandomFully,
  WAIT_RESTORE_MIN_VERSION,
} from "./version.ts";

export interface IptablesClientOptions {
  exec: Exec;
  family: IPFamily;
  backend: IptablesBackend;
  logger?: Logger;
  /** Bound on every run, restore included. Upstream bounds its -C checks at 5 minutes. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5 * 60_000;
const PROBE_TIMEOUT_MS = 10_000;

interface Probe {
  /** undefined when `--version` failed; flags then fall back as upstream does. */
  readonly version: string | undefined;
  readonly failure?: IptablesError;
  readonly waitFlags: readonly string[];
  readonly restoreWaitFlags: readonly string[];
}

export function createIptablesClient(opts: IptablesClientOptions): IptablesClient {
  const { exec, family, backend } = opts;
  const log = (opts.logger ?? nullLogger).named("iptables");
  const cmds: IptablesCommands = iptablesCommands(family, backend);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  // The version decides the lock flags, so it is read once, on first use. A failed read is not
  // remembered: the next call tries again rather than running without lock flags forever.
  let probed: Promise<Probe> | undefined;
  const probe = (): Promise<Probe> => {
    probed ??= readVersion().then((p) => {
      if (p.version === undefined) probed = undefined;
      return p;
    });
    return probed;
  };

  async function readVersion(): Promise<Probe> {
    const res = await exec.run({ cmd: cmds.iptables, args: ["--version"], timeoutMs: PROBE_TIMEOUT_MS });
    const info = res.code === 0 ? parseIptablesVersion(res.stdout + res.stderr) : undefined;
    if (!info) {
      const failure = new IptablesError(cmds.iptables, ["--version"], res.code, res.stderr || res.stdout);
      log.warn("Error checking iptables version, assuming version at least", {
        version: MIN_CHECK_VERSION,
        err: failure,
      });
      return {
        version: undefined,
        failure,
        waitFlags: iptablesWaitFlags(MIN_CHECK_VERSION),
        restoreWaitFlags: restoreWaitFlags(MIN_CHECK_VERSION, await restoreKnowsVersion()),
      };
    }
    const knows = versionAtLeast(info.version, WAIT_RESTORE_MIN_VERSION) || (await restoreKnowsVersion());
    return {
      version: info.version,
      waitFlags: iptablesWaitFlags(info.version),
      restoreWaitFlags: restoreWaitFlags(info.version, knows),
    };
  }

  // Old iptables-restore ignores unknown options and reads stdin; an empty stdin makes it exit.
  async function restoreKnowsVersion(): Promise<boolean> {
    const res = await exec.run({
      cmd: cmds.restore,
      args: ["--version"],
      stdin: "",
      timeoutMs: PROBE_TIMEOUT_MS,
    });
    return res.code === 0 && parseIptablesVersion(res.stdout + res.stderr) !== undefined;
  }

  async function iptables(args: readonly string[]): Promise<ExecResult & { args: string[] }> {
    const full = [...(await probe()).waitFlags, ...args];
    log.v(5).info("Running iptables", { command: cmds.iptables, args: full });
    return { ...(await exec.run({ cmd: cmds.iptables, args: full, timeoutMs })), args: full };
  }

  const fail = (res: ExecResult & { args: string[] }, cmd = cmds.iptables) =>
    new IptablesError(cmd, res.args, res.code, res.stderr || res.stdout);

  // -C exits 1 when the rule (or its chain) is absent; anything else is a failure to check.
  async function checkRule(table: Table, chain: string, args: readonly string[]): Promise<boolean> {
    const res = await iptables(["-C", chain, "-t", table, ...args]);
    if (res.code === 0) return true;
    if (res.code === 1) return false;
    // A rule cannot exist in (or jump to) a chain that does not: under --dry-run the chain's
    // creation was only recorded, and a real run would have created it just before.
    if (
      /Chain '.*' does not exist|No chain\/target\/match by that name|Couldn't load target/.test(res.stderr)
    )
      return false;
    throw fail(res);
  }

  async function save(args: string[], linesStartingWith?: string): Promise<string> {
    log.v(4).info("Running iptables-save", { command: cmds.save, args });
    const res = await exec.run({
      cmd: cmds.save,
      args,
      timeoutMs,
      ...(linesStartingWith !== undefined ? { keepStdoutLinesStartingWith: linesStartingWith } : {}),
    });
    if (res.code !== 0) throw new IptablesError(cmds.save, args, res.code, res.stderr || res.stdout);
    return res.stdout;
  }

  return {
    family,
    backend,

    save: (table, only) => save(["-t", table], only?.linesStartingWith),
    saveAll: () => save([]),

    async restoreAll(data: RestoreInput, ro: RestoreOptions): Promise<void> {
      const args = [...(await probe()).restoreWaitFlags];
      if (ro.noFlush) args.push("--noflush");
      if (ro.counters) args.push("--counters");
      // Pieces go to the tool as they are (an array is an iterable of them): never joined here.
      // Pieces made as they are read have no length before they are read.
      const bytes = restoreInputLength(data);
      log.v(4).info("Running iptables-restore", {
        command: cmds.restore,
        args,
        ...(bytes === undefined ? {} : { bytes }),
      });
      const res = await exec.run({ cmd: cmds.restore, args, stdin: data, timeoutMs });
      if (res.code !== 0) throw new IptablesRestoreError(cmds.restore, args, res.code, res.stderr, data);
    },

    // Exit 1 from -N means the chain is already there (upstream reads it the same way).
    async ensureChain(table, chain) {
      const res = await iptables(["-N", chain, "-t", table]);
      if (res.code === 0) return false;
      if (res.code === 1) return true;
      throw fail(res);
    },

    async chainExists(table, chain) {
      const res = await iptables(["-S", chain, "-t", table]);
      if (res.code === 0) return true;
      if (res.code === 1) return false;
      throw fail(res);
    },

    async flushChain(table, chain) {
      const res = await iptables(["-F", chain, "-t", table]);
      if (res.code !== 0) throw fail(res);
    },

    async deleteChain(table, chain) {
      const res = await iptables(["-X", chain, "-t", table]);
      if (res.code === 0) return;
      const err = fail(res);
      // Missing is fine; "in use" or "not empty" is not.
      if (res.code === 1 && err.isNotFound()) return;
      throw err;
    },

    async ensureRule(position: RulePosition, table, chain, args, known) {
      if (!known?.absent && (await checkRule(table, chain, args))) return true;
      const res = await iptables([position === "prepend" ? "-I" : "-A", chain, "-t", table, ...args]);
      if (res.code !== 0) throw fail(res);
      return false;
    },

    async deleteRule(table, chain, args) {
      if (!(await checkRule(table, chain, args))) return;
      const res = await iptables(["-D", chain, "-t", table, ...args]);
      if (res.code !== 0) throw fail(res);
    },

    async version() {
      const p = await probe();
      if (p.version === undefined) throw p.failure;
      return p.version;
    },

    async hasRandomFully() {
      const p = await probe();
      return p.version !== undefined && supportsRandomFully(p.version);
    },
  };
}

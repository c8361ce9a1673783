// Builds the host clients a run needs. Under --dry-run every client sits on the recorder, so
// reads reach the real host and writes become planned commands; a HostState replaces probes.

import { missingToolsAsEmpty } from "../dryrun/missing-tools.ts";
import { createRecordingHashsize, createRecordingSysctl } from "../dryrun/recording-sysctl.ts";
import { DryRunRecorder } from "../exec/dry-run.ts";
import { createRealExec } from "../exec/runner.ts";
import type { Exec } from "../exec/types.ts";
import { hostStateExec } from "../host/host-state/exec.ts";
import { ipsetFromHostState, kernelFromHostState, sysctlFromHostState } from "../host/host-state/overlay.ts";
import type { HostState } from "../host/host-state/schema.ts";
import { createIpsetClient } from "../host/ipset/client.ts";
import type { IpsetClient } from "../host/ipset/types.ts";
import { createKernelClient } from "../host/kernel/client.ts";
import type { KernelClient } from "../host/kernel/types.ts";
import { createConntrackHashsizeClient, createSysctlClient } from "../host/sysctl/client.ts";
import type { ConntrackHashsizeClient, SysctlClient } from "../host/sysctl/types.ts";

export interface Host {
  readonly exec: Exec;
  /** Present under --dry-run: the ordered list of mutating commands. */
  readonly recorder?: DryRunRecorder;
  /** Under --dry-run: the host tools that were asked for and are not installed. */
  readonly missingTools?: readonly string[];
  readonly kernel: KernelClient;
  readonly sysctl: SysctlClient;
  /** nf_conntrack's hashsize (under /sys), raised with nf_conntrack_max. */
  readonly hashsize: ConntrackHashsizeClient;
  readonly ipset: IpsetClient;
}

export interface HostOptions {
  readonly dryRun: boolean;
  readonly hostState?: HostState;
  /** Test hook: the exec real commands go to (default: child processes). */
  readonly exec?: Exec;
  /** Test hook: filesystem root for /proc, /sys and /lib/modules. */
  readonly root?: string;
}

export function createHost(opts: HostOptions): Host {
  const live = opts.exec ?? createRealExec();
  // A HostState stands in for the host's read-only probes (dry runs only reach this with one).
  const real = opts.hostState ? hostStateExec(opts.hostState, live) : live;
  // A dry run plans even where a tool is missing: its reads answer as an empty table would.
  const probing = opts.dryRun ? missingToolsAsEmpty(real) : undefined;
  const recorder = probing ? new DryRunRecorder(probing) : undefined;
  const exec: Exec = recorder ?? real;
  const root = opts.root ?? "/";
  let kernel = createKernelClient({ exec, root });
  let ipset = createIpsetClient({ exec });
  if (opts.hostState) {
    kernel = kernelFromHostState(opts.hostState, kernel);
    ipset = ipsetFromHostState(opts.hostState, ipset);
  }
  let liveSysctl = createSysctlClient({ root });
  if (opts.hostState) liveSysctl = sysctlFromHostState(opts.hostState, liveSysctl);
  const sysctl = recorder
    ? createRecordingSysctl(liveSysctl, (argv) => recorder.commands.push({ argv }))
    : liveSysctl;
  const liveHashsize = createConntrackHashsizeClient({ root });
  const hashsize = recorder
    ? createRecordingHashsize(liveHashsize, (argv) => recorder.commands.push({ argv }))
    : liveHashsize;
  return {
    exec,
    kernel,
    sysctl,
    hashsize,
    ipset,
    ...(recorder ? { recorder } : {}),
    ...(probing ? { missingTools: probing.missing } : {}),
  };
}

// Types shared by the flag table, the argv parser, help rendering and the entry API.

import type { ConfigIssue, Override, ProxyConfig } from "../config/types.ts";

export type OutputFormat = "text" | "json" | "dot";
export type IptablesBackend = "auto" | "legacy" | "nft";

/** What to do with the configuration, as opposed to the configuration itself. */
export interface RunOptions {
  dryRun: boolean;
  output: OutputFormat;
  /** --state, in the order given: one is a snapshot, more are a replay (--dry-run only). */
  stateFiles?: readonly string[];
  dumpStateFile?: string;
  cleanup: boolean;
  writeConfigTo?: string;
  initOnly: boolean;
  iptablesBackend: IptablesBackend;
  configFile?: string;
  /** --master: API server URL that overrides the kubeconfig's. */
  master?: string;
  /** --from: the source address `explain` traces from. */
  explainFrom?: string;
  /** Every flag's value text (given or default), as /flagz shows it. */
  flagValues?: Readonly<Record<string, string>>;
}

/** `explain IP:port[/proto]`: the connection to trace (source undefined: a client outside the node). */
export interface ExplainRequest {
  readonly destination: string;
  readonly port: number;
  readonly protocol: "tcp" | "udp" | "sctp";
  readonly source?: string;
}

export type CommandLine =
  | { kind: "help"; text: string }
  /** raw: --version=raw was asked for (upstream prints the full version struct then). */
  | { kind: "version"; raw: boolean }
  | { kind: "error"; errors: ConfigIssue[] }
  | {
      kind: "run";
      config: ProxyConfig;
      run: RunOptions;
      overrides: Override[];
      notices: string[];
      /** Accepted but worth a warning (unknown config fields, as upstream's lenient decoding). */
      warnings: string[];
      /** Canonical names of the flags given on the command line, in first-seen order. */
      explicitFlags: string[];
      /** Set for `kube-proxy-ts explain TARGET`: trace one connection instead of running. */
      explain?: ExplainRequest;
    };

export type FlagKind =
  | "bool"
  | "string"
  | "int"
  | "float"
  | "duration"
  | "stringSlice"
  | "stringArray"
  | "cidrList"
  | "map";

/** A parsed flag value: durations in milliseconds, lists as arrays, maps as records. */
export type FlagValue =
  | boolean
  | string
  | number
  | readonly string[]
  | Readonly<Record<string, boolean>>
  | Readonly<Record<string, number>>;

export type FlagGroup =
  | "General"
  | "API server"
  | "Node and servers"
  | "Proxy mode"
  | "iptables"
  | "ipvs"
  | "Local traffic detection"
  | "conntrack"
  | "Logging"
  | "kube-proxy-ts"
  | "Deprecated";

/** Flags that steer the process rather than set a config field. */
export type RunKey = keyof RunOptions | "help" | "version";

/** Where a flag's value goes: a v1alpha1 config path ("iptables.syncPeriod") or "runOption" (see `run`). */
export type FlagTarget = string;

export interface FlagSpec {
  /** Canonical long name without dashes. */
  readonly name: string;
  /** Other long names that mean the same flag. */
  readonly aliases: readonly string[];
  /** Single-letter form used with one dash. */
  readonly shorthand?: string;
  readonly kind: FlagKind;
  /** Type shown in --help, as upstream shows it (e.g. "ipport", "ProxyMode"). */
  readonly typeName: string;
  readonly default: FlagValue;
  readonly help: string;
  readonly config: FlagTarget;
  readonly run?: RunKey;
  readonly deprecated?: string;
  readonly hidden?: boolean;
  readonly group: FlagGroup;
  /** Value used when the flag is given without "=value" (pflag's NoOptDefVal); bools use "true". */
  readonly noOptValue?: string;
  /** Allowed values, checked while parsing. */
  readonly choices?: readonly string[];
  /** Inclusive bounds for "int" flags; int32 when absent. */
  readonly intRange?: readonly [number, number];
  /** Value type of a "map" flag: feature gates map to bools, vmodule to verbosity levels. */
  readonly mapValue?: "bool" | "uint";
  /** Deprecated port-only flags: the address whose port they replace. */
  readonly portOf?: "healthzBindAddress" | "metricsBindAddress";
}

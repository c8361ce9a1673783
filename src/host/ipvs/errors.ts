// Typed failures of ipvsadm. Exec never throws on an exit status; the client turns a failed run
// into an IpvsError so callers can tell "no IPVS in this kernel" from "line 3 of the batch was
// refused" without matching strings themselves.

import { HostToolError } from "../errors.ts";

/** What ipvsadm prints (exit 2) when the kernel has no IPVS and modprobe ip_vs does not help. */
export const IPVS_UNAVAILABLE_MESSAGE =
  "Can't initialize ipvs: Protocol not available\nAre you sure that IP Virtual Server is built in the kernel or as module?";

/** One line of `ipvsadm --restore` input the tool refused, as far as the client can tell. */
export interface IpvsLineFailure {
  /** What ipvsadm printed for it. */
  readonly message: string;
  /** 1-based input line, when exactly one line can have caused the message. */
  readonly line?: number;
  readonly text?: string;
  /** Every input line that could have produced the message (ipvsadm never prints line numbers). */
  readonly candidates: readonly number[];
}

export type IpvsErrorKind =
  /** The kernel has no IPVS (or ipvsadm could not reach it). */
  | "unavailable"
  /** ipvsadm is not installed. */
  | "not-found"
  /** A restore batch was (partly) refused. */
  | "restore"
  /** The output could not be understood. */
  | "parse"
  /** The caller asked for something ipvsadm cannot express (caught before running anything). */
  | "invalid"
  | "failed";

export class IpvsError extends HostToolError {
  override readonly name = "IpvsError";
  readonly kind: IpvsErrorKind;
  readonly command: string;
  readonly args: readonly string[];
  readonly exitCode: number;
  readonly stderr: string;
  /** For restore failures: each refused line, in the order ipvsadm reported them. */
  readonly failures: readonly IpvsLineFailure[];
  /**
   * The first refused input line, when it is known. A field, not a getter: JavaScriptCore puts
   * an own "line" property (the throw site) on every Error, which would hide a getter.
   */
  readonly line: number | undefined;

  constructor(opts: {
    kind: IpvsErrorKind;
    message: string;
    command?: string;
    args?: readonly string[];
    exitCode?: number;
    stderr?: string;
    failures?: readonly IpvsLineFailure[];
  }) {
    super(opts.message);
    this.kind = opts.kind;
    this.command = opts.command ?? "ipvsadm";
    this.args = opts.args ?? [];
    this.exitCode = opts.exitCode ?? -1;
    this.stderr = opts.stderr ?? "";
    this.failures = opts.failures ?? [];
    this.line = this.failures.find((f) => f.line !== undefined)?.line;
  }

  get isUnavailable(): boolean {
    return this.kind === "unavailable";
  }

  /**
   * The virtual service or real server named does not exist. Kind "not-found" is a different
   * thing (ipvsadm itself is not installed) and does not count.
   */
  isNotFound(): boolean {
    return /No such service|No such destination/.test(this.stderr);
  }

  /** The virtual service or real server to add exists already. */
  isExists(): boolean {
    return /Service already exists|Destination already exists/.test(this.stderr);
  }
}

/** True when ipvsadm's output says the kernel side of IPVS is missing. */
export function isUnavailableMessage(stderr: string): boolean {
  return stderr.includes("Can't initialize ipvs");
}

// The one base class of every host tool's typed failure (ipset, iptables, ipvsadm, ip, nft,
// conntrack, nfacct, sysctl, kernel, HostState). Callers that only need to know whether the object
// named is missing, or is there already, ask any of them the same two questions.

export abstract class HostToolError extends Error {
  /** The object the command named (set, chain, rule, device, service, sysctl, ...) does not exist. */
  abstract isNotFound(): boolean;
  /** The object the command would create exists already. */
  abstract isExists(): boolean;
}

/** The output languages whose text our host clients write: each has one module that speaks it. */
export type OutputLanguage = "iptables-restore" | "nft" | "ipset" | "ipvsadm" | "ip";

/**
 * Text refused before it reached a tool: not a token the tool's syntax allows there (a chain
 * name with a blank, a set name over the kernel's length, an address that does not parse).
 * Raised by the per-language text modules, never by the tools, so nothing was run.
 */
export class HostInputError extends HostToolError {
  override readonly name = "HostInputError";
  constructor(
    readonly language: OutputLanguage,
    /** What the text was to be, e.g. "chain name". */
    readonly what: string,
    readonly value: string,
    /** Why it was refused, e.g. "longer than 28 bytes". */
    readonly reason: string,
  ) {
    super(`${language}: refused ${what} ${shown(value)}: ${reason}`);
  }

  isNotFound(): boolean {
    return false;
  }

  isExists(): boolean {
    return false;
  }
}

/** Refused text as a message shows it: quoted, escaped, and cut (a name may be megabytes). */
function shown(value: string): string {
  const SHOWN_MAX = 80;
  return value.length <= SHOWN_MAX
    ? JSON.stringify(value)
    : `${JSON.stringify(value.slice(0, SHOWN_MAX))}... (${value.length} characters)`;
}

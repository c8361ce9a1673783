// What the nfacct client offers: named packet/byte counters (nfnetlink_acct objects).

/** The kernel's name limit (NFACCT_NAME_MAX, 32) less the terminating NUL. */
export const MAX_NFACCT_NAME = 31;

export interface NfacctCounters {
  readonly packets: number;
  readonly bytes: number;
}

export interface NfacctObject extends NfacctCounters {
  readonly name: string;
}

export interface NfacctClient {
  /** Whether nfacct is installed and the kernel answers (nfnetlink_acct). */
  available(): Promise<boolean>;
  /** Creates the counter; an existing one is left as it is. */
  ensure(name: string): Promise<void>;
  /** The counter's values, or undefined when there is no counter by that name. */
  get(name: string): Promise<NfacctCounters | undefined>;
}

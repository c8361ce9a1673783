// What the conntrack client offers: listing one family's flows of a protocol, and deleting the
// flows a filter names (upstream's reconciler: a frontend, or a NodePort, and the endpoint the
// flow was DNATed to, seen as the reply's source).

import type { IPFamily } from "../../util/net/family.ts";
import type { Protocol } from "../../util/net/protocol.ts";

/** The parts of a flow the reconciler reads: where it was sent, and who answers it. */
export interface ConntrackFlowEntry {
  readonly origDst: string;
  readonly origDport: number;
  /** The reply's source: the endpoint a DNATed flow was sent to, else the original destination. */
  readonly replySrc: string;
  readonly replySport: number;
}

/**
 * Flows of `protocol` in `family` answered from replySrc:replySport and, when given, sent to
 * origDst (absent: any address, e.g. a NodePort on any local address) and origDport (absent:
 * any port, for an endpoint no Service serves any more).
 */
export interface FlowFilter {
  readonly family: IPFamily;
  readonly protocol: Protocol;
  readonly origDst?: string;
  readonly origDport?: number;
  readonly replySrc: string;
  readonly replySport: number;
}

export interface ConntrackClient {
  /** Every flow of `protocol` in `family`'s table. */
  listFlows(family: IPFamily, protocol: Protocol): Promise<ConntrackFlowEntry[]>;
  /**
   * Deletes the flows the filters name, all in one conntrack run (each filter still costs the
   * tool one walk of the table); resolves to the number deleted.
   */
  deleteFlows(filters: readonly FlowFilter[]): Promise<number>;
}

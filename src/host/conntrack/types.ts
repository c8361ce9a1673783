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

/** Flows of `protocol` in `family` with these reply source and, when given, original destination. */
export interface FlowFilter {
  readonly family: IPFamily;
  readonly protocol: Protocol;
  /** Absent for a NodePort: any local address. */
  readonly origDst?: string;
  readonly origDport: number;
  readonly replySrc: string;
  readonly replySport: number;
}

export interface ConntrackClient {
  /** Every flow of `protocol` in `family`'s table. */
  listFlows(family: IPFamily, protocol: Protocol): Promise<ConntrackFlowEntry[]>;
  /** Deletes the flows `filter` names; resolves to the number deleted (0 when none matched). */
  deleteFlows(filter: FlowFilter): Promise<number>;
}

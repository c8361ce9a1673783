// The typed IPVS client (over ipvsadm). The proxier reads the whole kernel table once per sync
// and writes one batch, so exec calls per sync stay constant however many Services there are.

import type { Protocol } from "../../util/net/protocol.ts";

export interface VirtualServerKey {
  readonly address: string;
  readonly port: number;
  readonly protocol: Protocol;
}

export interface VirtualServer extends VirtualServerKey {
  /** rr, wrr, lc, wlc, lblc, lblcr, sh, dh, sed, nq, mh. */
  readonly scheduler: string;
  /** Scheduler flags as ipvsadm's -b takes them: "sh-fallback", "sh-port", "mh-fallback", "mh-port"... */
  readonly flags: readonly string[];
  /** Persistence timeout in seconds (ClientIP session affinity); 0: not persistent. */
  readonly timeout: number;
}

export interface RealServer {
  readonly address: string;
  readonly port: number;
  readonly weight: number;
  /** Connection counts as the kernel reports them (graceful termination waits for zero). */
  readonly activeConnections: number;
  readonly inactiveConnections: number;
}

export interface IpvsService {
  readonly server: VirtualServer;
  readonly reals: readonly RealServer[];
}

export type IpvsChange =
  | { readonly op: "add-service" | "edit-service"; readonly server: VirtualServer }
  | { readonly op: "delete-service"; readonly key: VirtualServerKey }
  | {
      readonly op: "add-real" | "edit-real";
      readonly key: VirtualServerKey;
      readonly real: { readonly address: string; readonly port: number; readonly weight: number };
    }
  | {
      readonly op: "delete-real";
      readonly key: VirtualServerKey;
      readonly real: { address: string; port: number };
    };

/** Every kind of change, one per kind of restore line (-A, -E, -D, -a, -e, -d). */
export const IPVS_CHANGE_OPS = [
  "add-service",
  "edit-service",
  "delete-service",
  "add-real",
  "edit-real",
  "delete-real",
] as const satisfies readonly IpvsChange["op"][];

/** Real servers read by index: a compact list need not hold an object per real server. */
export interface IndexedReals {
  readonly length: number;
  address(i: number): string;
  port(i: number): number;
  weight(i: number): number;
}

/** The adds of one virtual server's real servers, in order: one element for as many lines. */
export interface AddRealsChange {
  readonly op: "add-reals";
  readonly key: VirtualServerKey;
  readonly reals: IndexedReals;
}

/**
 * A compact list of changes: it hands them over one by one, in order, each time it is iterated
 * (the real servers of a new virtual server possibly as one AddRealsChange). A change handed
 * over is valid until the next one only (the list may hand over one object again, refilled):
 * copy what is kept. `length` counts lines.
 */
export interface CompactIpvsChanges extends Iterable<IpvsChange | AddRealsChange> {
  readonly length: number;
}

/** The changes of one write, in order. */
export type IpvsChanges = readonly IpvsChange[] | CompactIpvsChanges;

export interface IpvsTimeouts {
  /** Seconds; 0 leaves the kernel's value. */
  readonly tcp: number;
  readonly tcpFin: number;
  readonly udp: number;
}

export interface IpvsClient {
  /** The whole table, with connection counts (one ipvsadm call). */
  read(): Promise<IpvsService[]>;
  /**
   * Just these virtual servers, with connection counts (one ipvsadm call each, concurrently);
   * those the kernel lacks are left out.
   */
  readServices(keys: readonly VirtualServerKey[]): Promise<IpvsService[]>;
  /** All changes in one `ipvsadm --restore` (one call); resolves when applied. */
  apply(changes: IpvsChanges): Promise<void>;
  setTimeouts(t: IpvsTimeouts): Promise<void>;
  /** Removes every virtual server (ipvsadm -C). */
  flush(): Promise<void>;
  /**
   * Lines another writer (netlink) put into the table: a reading client sizes its next
   * whole-table read's time bound by them.
   */
  noteWritten?(lines: number): void;
}

const KEY_PROTOCOL: Readonly<Record<Protocol, string>> = { TCP: "tcp", UDP: "udp", SCTP: "sctp" };

/**
 * A virtual server's identity as one string, "198.51.100.1,tcp:80" ("2001:db8::1,tcp:80"): the
 * spelling of an ipset hash:ip,port member, so a proxier can use one string both as the key of
 * a virtual server and as the set member for the same address, protocol and port.
 */
export function virtualServerKeyString(k: VirtualServerKey): string {
  return `${k.address},${KEY_PROTOCOL[k.protocol]}:${k.port}`;
}

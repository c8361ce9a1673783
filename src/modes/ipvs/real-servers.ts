// The real servers of one service port as ipvs mode wants them, shared by the port's virtual
// servers. A port with 10,000 endpoints is 10,000 real servers (a million for 100 such ports),
// so they are held as an array of addresses (the endpoints' own strings) and one port number
// when all share it, the usual case: a real server costs an array slot, not an object. The
// {address, port, weight} objects the dry run and the rare edit read are made on request.

import type { IndexedReals } from "../../host/ipvs/types.ts";
import { joinHostPort } from "../../util/net/host-port.ts";

/** Weight of a serving real server (upstream never weighs endpoints differently). */
export const SERVING_WEIGHT = 1;

/** A wanted real server, at the serving weight: what an add or edit line writes. */
export interface DesiredReal {
  readonly address: string;
  readonly port: number;
  readonly weight: number;
}

export class RealServers implements IndexedReals, Iterable<DesiredReal> {
  constructor(
    private readonly addresses: readonly string[],
    /** The port of every real server, or of each. */
    private readonly ports: number | readonly number[],
  ) {}

  get length(): number {
    return this.addresses.length;
  }

  address(i: number): string {
    return this.addresses[i]!;
  }

  port(i: number): number {
    return typeof this.ports === "number" ? this.ports : this.ports[i]!;
  }

  weight(_i: number): number {
    return SERVING_WEIGHT;
  }

  /** Real server i as an object (made on request). */
  at(i: number): DesiredReal {
    return { address: this.address(i), port: this.port(i), weight: SERVING_WEIGHT };
  }

  /** Whether a real server has this "ip:port" identity (realId). */
  hasId(id: string): boolean {
    for (let i = 0; i < this.addresses.length; i++)
      if (joinHostPort(this.addresses[i]!, this.port(i)) === id) return true;
    return false;
  }

  *[Symbol.iterator](): Iterator<DesiredReal> {
    for (let i = 0; i < this.addresses.length; i++) yield this.at(i);
  }

  /** Every real server as an object (made on request: the dry run's report, tests). */
  toArray(): DesiredReal[] {
    const out: DesiredReal[] = [];
    for (let i = 0; i < this.addresses.length; i++) out.push(this.at(i));
    return out;
  }

  /** As JSON, the array of objects it stands for. */
  toJSON(): DesiredReal[] {
    return this.toArray();
  }
}

/** Real servers in order from parallel lists: one port number is kept when all share it. */
export function realServers(addresses: readonly string[], ports: readonly number[]): RealServers {
  const first = ports[0] ?? 0;
  return new RealServers(addresses, ports.every((p) => p === first) ? first : ports);
}

/** The real servers of a port with no endpoint: one shared empty list. */
export const NO_REALS = new RealServers(Object.freeze([]), 0);

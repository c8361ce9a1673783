// The endpoints of one Service's ports as the endpoints map keeps them: parallel arrays in id
// order, a port found by binary search. No map entry, record or key of its own per port: a
// Service with 100,000 ports costs its ports' endpoint lists and three array slots each.

import type { Protocol } from "../util/net/protocol.ts";
import type { EndpointInfo } from "./types.ts";

export class ServiceEndpoints {
  /** `ids` ascending; the protocol (as the slices gave it) and endpoints of each at its index. */
  constructor(
    readonly ids: readonly string[],
    private readonly protocols: readonly Protocol[],
    private readonly lists: readonly (readonly EndpointInfo[])[],
  ) {}

  get size(): number {
    return this.ids.length;
  }

  /** Where the last lookup found its port: a sync asks for ids in order, mostly the next one. */
  private last = 0;

  /** The index of `id`; -1 when the Service has no such port. */
  indexOf(id: string): number {
    const ids = this.ids;
    // Ids share long prefixes ("ns/name:port-12345"): each comparison of a search walks them.
    if (ids[this.last] === id) return this.last;
    if (ids[this.last + 1] === id) return ++this.last;
    let lo = 0;
    let hi = ids.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = ids[mid]!;
      if (at === id) {
        this.last = mid;
        return mid;
      }
      if (at < id) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  protocolAt(i: number): Protocol {
    return this.protocols[i]!;
  }

  endpointsAt(i: number): readonly EndpointInfo[] {
    return this.lists[i]!;
  }
}

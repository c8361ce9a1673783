// The proxier --dry-run syncs into: it records the service ports and endpoints a real proxier
// would program. The iptables and ipvs proxiers add their rule plans on top of this.

import type { Proxier, SyncInput } from "../proxy/proxier.ts";
import { ServiceListing } from "./service-listing.ts";

export class PlanProxier implements Proxier {
  /** The last sync's service ports, listed as they are read (see ServiceListing). */
  servicePorts = new ServiceListing([], () => undefined);
  syncs = 0;

  async sync(input: SyncInput): Promise<void> {
    this.syncs++;
    this.servicePorts = new ServiceListing(input.services.values(), (id) => input.endpoints.get(id));
  }
}

// The proxier --dry-run syncs into: it records the service ports and endpoints a real proxier
// would program. The iptables and ipvs proxiers add their rule plans on top of this.

import type { Proxier, SyncInput } from "../proxy/proxier.ts";
import { type ListedServicePort, listServicePort } from "./service-listing.ts";

export class PlanProxier implements Proxier {
  servicePorts: ListedServicePort[] = [];
  syncs = 0;

  async sync(input: SyncInput): Promise<void> {
    this.syncs++;
    this.servicePorts = [...input.services.values()]
      .sort((a, b) => a.id.localeCompare(b.id))
      .map((svc) => listServicePort(svc, input.endpoints.get(svc.id) ?? []));
  }
}

// On a dual-stack node both families' proxiers read the same kernel tables: `ipvsadm -L` lists
// every virtual server of both families, `ipset save` every set, `ip -o addr` every address.
// Within one sync round (both families, one after the other) the first whole-table read is
// split by family: the reader gets its part, and each other family's part waits for that
// family's next read of the round. A family's part stays true while the other family writes:
// each proxier writes only its own virtual servers, its own sets and its own addresses.
//
// Outside a round (the graceful-termination check between syncs) every read goes to the
// kernel and nothing is kept, so no part is ever older than the round it was read in.

import type { IpsetClient, IpsetSet } from "../../host/ipset/types.ts";
import type { IpvsClient, IpvsService } from "../../host/ipvs/types.ts";
import type { InterfaceAddress, NetlinkClient } from "../../host/netlink/types.ts";
import { familyOf, type IPFamily } from "../../util/net/family.ts";
import { SET_IDS, setCatalog } from "./ipsets.ts";

/** One table's reads: the kernel read once per round, its parts handed out once each. */
class SharedRead<T> {
  private readonly waiting = new Map<IPFamily, T>();

  constructor(
    private readonly families: readonly IPFamily[],
    private readonly read: () => Promise<T>,
    private readonly split: (whole: T, family: IPFamily) => T,
  ) {}

  async take(family: IPFamily, inRound: boolean): Promise<T> {
    const kept = this.waiting.get(family);
    if (kept !== undefined) {
      this.waiting.delete(family);
      return kept;
    }
    const whole = await this.read();
    if (inRound) {
      for (const other of this.families)
        if (other !== family) this.waiting.set(other, this.split(whole, other));
    }
    return this.split(whole, family);
  }

  clear(): void {
    this.waiting.clear();
  }
}

export interface FamilyClients {
  readonly ipvs: IpvsClient;
  readonly ipset: IpsetClient;
  readonly netlink: NetlinkClient;
}

export class SharedKernelReads {
  private inRound = false;
  private readonly services: SharedRead<IpvsService[]>;
  private readonly sets: SharedRead<Map<string, IpsetSet>>;
  /** By the device left out of the listing ("" for none). */
  private readonly addresses = new Map<string, SharedRead<InterfaceAddress[]>>();

  constructor(
    private readonly clients: FamilyClients,
    private readonly families: readonly IPFamily[],
  ) {
    this.services = new SharedRead(
      families,
      () => clients.ipvs.read(),
      (all, family) => all.filter((s) => familyOf(s.server.address) === family),
    );
    const names = new Map(
      families.map((f) => {
        const catalog = setCatalog(f);
        return [f, SET_IDS.map((id) => catalog[id].spec.name)] as const;
      }),
    );
    this.sets = new SharedRead(
      families,
      () => clients.ipset.listSets(),
      (all, family) => {
        const mine = new Map<string, IpsetSet>();
        for (const name of names.get(family) ?? []) {
          const set = all.get(name);
          if (set) mine.set(name, set);
        }
        return mine;
      },
    );
  }

  /** Whole-table reads between begin and end are shared by the families. */
  beginRound(): void {
    this.inRound = true;
  }

  /** Drops the parts no family took. */
  endRound(): void {
    this.inRound = false;
    this.services.clear();
    this.sets.clear();
    for (const read of this.addresses.values()) read.clear();
  }

  /** The clients as one family's proxier sees them: its whole-table reads go through the round. */
  forFamily(family: IPFamily): FamilyClients {
    const { ipvs, ipset, netlink } = this.clients;
    return {
      ipvs: { ...ipvs, read: () => this.services.take(family, this.inRound) },
      ipset: { ...ipset, listSets: () => this.sets.take(family, this.inRound) },
      netlink: {
        ...netlink,
        localAddresses: (excludeDevice?: string) =>
          this.addressesOf(excludeDevice).take(family, this.inRound),
      },
    };
  }

  private addressesOf(excludeDevice: string | undefined): SharedRead<InterfaceAddress[]> {
    const key = excludeDevice ?? "";
    let read = this.addresses.get(key);
    if (!read) {
      read = new SharedRead(
        this.families,
        () => this.clients.netlink.localAddresses(excludeDevice),
        (all, family) => all.filter((a) => familyOf(a.address) === family),
      );
      this.addresses.set(key, read);
    }
    return read;
  }
}

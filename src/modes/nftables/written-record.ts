// What this proxier's transactions wrote into its table, kept for drift checks, beside the
// element store: how many rules each chain holds, which sets and maps exist, and the elements
// of the containers the element store does not keep (nodeport-ips). Fed by every transaction
// as its operations are added (NftTransaction's `observe`). A rule is counted, not kept: nft
// lists rules in a normal form of its own, so only their number can be compared.

import type { NftOperation } from "../../host/nft/types.ts";
import { StringMap } from "../../util/string-map.ts";
import { isAffinitySetName } from "./names.ts";

export class WrittenRecord {
  private readonly counts = new StringMap<number>();
  /** The chain rules are being added to (a chain's rules come one after another), and its count. */
  private pendingChain: string | undefined;
  private pendingCount = 0;
  /** Sets and maps added and not deleted since. */
  readonly containers = new Set<string>();
  /** Container -> key text -> value text, for containers outside the element store. */
  readonly elements = new Map<string, Map<string, string>>();
  /**
   * False from a failed transaction (or before the first full sync) until a full sync went
   * through: the record then says what was tried, not what the kernel took.
   */
  valid = false;

  constructor(private readonly inElementStore: (container: string) => boolean) {}

  /** Chain -> rules written into it since it was last flushed. */
  get chains(): StringMap<number> {
    this.settle();
    return this.counts;
  }

  private settle(): void {
    if (this.pendingChain === undefined) return;
    this.counts.set(this.pendingChain, this.pendingCount);
    this.pendingChain = undefined;
  }

  /** A full sync rewrites everything it keeps: the record starts again with it. */
  reset(): void {
    this.pendingChain = undefined;
    this.counts.clear();
    this.containers.clear();
    this.elements.clear();
  }

  /** Whether the record keeps the elements of `container` (see NftTransaction's option). */
  readonly observesElementsOf = (container: string): boolean =>
    // Affinity sets are filled by the kernel, not by us.
    !this.inElementStore(container) && !isAffinitySetName(container);

  readonly observe = (op: NftOperation): void => {
    const o = op.object;
    if (o.kind === "rule") {
      // Counted without a lookup while the same chain's rules follow each other.
      if (o.chain === this.pendingChain) this.pendingCount++;
      else {
        this.settle();
        this.pendingChain = o.chain;
        this.pendingCount = (this.counts.get(o.chain) ?? 0) + 1;
      }
      return;
    }
    this.settle();
    switch (o.kind) {
      case "table":
        if (op.verb !== "add") this.reset();
        return;
      case "chain":
        if (op.verb === "delete") this.counts.delete(o.name);
        else if (op.verb === "flush" || !this.counts.has(o.name)) this.counts.set(o.name, 0);
        return;
      case "set":
      case "map":
        if (op.verb === "add") this.containers.add(o.name);
        else if (op.verb === "delete") this.containers.delete(o.name);
        if (op.verb !== "add") this.elements.delete(o.name);
        return;
      case "element": {
        if (!this.observesElementsOf(o.container)) return;
        const key = o.key.join(" . ");
        let held = this.elements.get(o.container);
        if (op.verb === "delete") {
          held?.delete(key);
          return;
        }
        if (!held) {
          held = new Map();
          this.elements.set(o.container, held);
        }
        held.set(key, o.value ? o.value.join(" . ") : "");
        return;
      }
    }
  };
}

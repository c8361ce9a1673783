// The elements this proxier believes are in its sets and maps, so that a sync adds, replaces
// or deletes only the elements that changed. Several service ports may need the same element
// (the cluster IP of a multi-port Service in @cluster-ips): it is counted, and deleted with the
// last port that needed it.

import type { NftTransaction } from "../../host/nft/transaction.ts";
import type { PortElement } from "./port-rules.ts";

interface Entry {
  value: string;
  refs: number;
}

const SEP = " . ";

function elementOf(e: PortElement, withComment: boolean) {
  return {
    kind: "element",
    container: e.container,
    key: e.key,
    ...(e.value ? { value: e.value } : {}),
    ...(withComment && e.comment ? { comment: e.comment } : {}),
  } as const;
}

export class ElementStore {
  private readonly entries = new Map<string, Entry>();

  /** A full sync flushed every container: nothing is known to be there. */
  reset(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  /** One port needs `e`: added, or replaced when the map holds another value for its key. */
  ensure(tx: NftTransaction, e: PortElement): void {
    const id = `${e.container} ${e.key.join(SEP)}`;
    const value = e.value ? e.value.join(SEP) : "";
    const entry = this.entries.get(id);
    if (!entry) {
      tx.add(elementOf(e, true));
      this.entries.set(id, { value, refs: 1 });
      return;
    }
    entry.refs++;
    if (entry.value !== value) {
      tx.delete(elementOf(e, false));
      tx.add(elementOf(e, true));
      entry.value = value;
    }
  }

  /** One port no longer needs `e`: deleted when no other port does. */
  release(tx: NftTransaction, e: PortElement): void {
    const id = `${e.container} ${e.key.join(SEP)}`;
    const entry = this.entries.get(id);
    if (!entry) return;
    if (--entry.refs > 0) return;
    this.entries.delete(id);
    tx.delete(elementOf(e, false));
  }
}

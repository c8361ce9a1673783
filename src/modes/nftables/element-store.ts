// The elements this proxier believes are in its sets and maps, so that a sync adds, replaces
// or deletes only the elements that changed. Several service ports may need the same element
// (the cluster IP of a multi-port Service in @cluster-ips): it is counted, and deleted with the
// last port that needed it.

import type { NftTransaction } from "../../host/nft/transaction.ts";
import type { PortElement } from "./port-rules.ts";

/** An element more than one port needs. */
interface Shared {
  value: string;
  refs: number;
}

const SEP = " . ";

/** The value as one text ("" for a set's element); a one-part value is its part, not a copy. */
function valueText(e: PortElement): string {
  if (!e.value) return "";
  return e.value.length === 1 ? e.value[0]! : e.value.join(SEP);
}

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
  /**
   * Element -> its value's text, as a string while one port needs it (the common case, and
   * there can be millions), or a Shared record with the count of ports.
   */
  private readonly entries = new Map<string, string | Shared>();

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
    const value = valueText(e);
    const entry = this.entries.get(id);
    if (entry === undefined) {
      tx.add(elementOf(e, true));
      this.entries.set(id, value);
      return;
    }
    const shared = typeof entry === "string" ? { value: entry, refs: 1 } : entry;
    if (typeof entry === "string") this.entries.set(id, shared);
    shared.refs++;
    if (shared.value !== value) {
      tx.delete(elementOf(e, false));
      tx.add(elementOf(e, true));
      shared.value = value;
    }
  }

  /** One port no longer needs `e`: deleted when no other port does. */
  release(tx: NftTransaction, e: PortElement): void {
    const id = `${e.container} ${e.key.join(SEP)}`;
    const entry = this.entries.get(id);
    if (entry === undefined) return;
    if (typeof entry !== "string" && --entry.refs > 0) return;
    this.entries.delete(id);
    tx.delete(elementOf(e, false));
  }
}

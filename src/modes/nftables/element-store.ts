// The elements this proxier believes are in its sets and maps, so that a sync adds, replaces
// or deletes only the elements that changed. Several service ports may need the same element
// (the cluster IP of a multi-port Service in @cluster-ips): it is counted, and deleted with the
// last port that needed it. What a port keeps of its elements until it changes is small (the
// store's own id strings: a delete names the key alone): a Service with 20,000 externalIPs x
// 100 ports needs two million elements.

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

/**
 * A port's elements as kept for releasing them later: each one's id (the store's own string,
 * from which its container and key read back); an element whose key would not read back (a part
 * or the container holds a space) is kept whole as well, by its position.
 */
export interface HeldElements {
  readonly ids: readonly string[];
  readonly whole: ReadonlyMap<number, PortElement> | undefined;
}

/** Whether `e`'s container and key read back from its id: no space where the id splits. */
function readsBack(e: PortElement): boolean {
  if (e.container.includes(" ")) return false;
  for (const k of e.key) if (k.includes(" ")) return false;
  return true;
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

  /** One port needs these elements (ensure each, in order); what it keeps to release them. */
  ensureAll(tx: NftTransaction, elements: readonly PortElement[]): HeldElements {
    const ids: string[] = [];
    let whole: Map<number, PortElement> | undefined;
    for (let i = 0; i < elements.length; i++) {
      const e = elements[i]!;
      ids.push(this.ensure(tx, e));
      if (!readsBack(e)) {
        whole ??= new Map();
        whole.set(i, e);
      }
    }
    return { ids, whole };
  }

  /** One port no longer needs the elements it held (release each, in order). */
  releaseAll(tx: NftTransaction, held: HeldElements): void {
    for (let i = 0; i < held.ids.length; i++) {
      const id = held.ids[i]!;
      const whole = held.whole?.get(i);
      if (whole) {
        this.release(tx, whole);
        continue;
      }
      const space = id.indexOf(" ");
      this.release(tx, { container: id.slice(0, space), key: id.slice(space + 1).split(SEP) });
    }
  }

  /** One port needs `e`: added, or replaced when the map holds another value for its key; its id. */
  ensure(tx: NftTransaction, e: PortElement): string {
    const id = `${e.container} ${e.key.join(SEP)}`;
    const value = valueText(e);
    const entry = this.entries.get(id);
    if (entry === undefined) {
      tx.add(elementOf(e, true));
      this.entries.set(id, value);
      return id;
    }
    const shared = typeof entry === "string" ? { value: entry, refs: 1 } : entry;
    if (typeof entry === "string") this.entries.set(id, shared);
    shared.refs++;
    if (shared.value !== value) {
      tx.delete(elementOf(e, false));
      tx.add(elementOf(e, true));
      shared.value = value;
    }
    return id;
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

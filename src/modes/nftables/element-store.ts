// The elements this proxier believes are in its sets and maps, so that a sync adds, replaces
// or deletes only the elements that changed. Several service ports may need the same element
// (the cluster IP of a multi-port Service in @cluster-ips): it is counted, and deleted with the
// last port that needed it.
//
// A Service with 20,000 externalIPs x 100 ports needs two million elements, so no string is
// made per element to know it. An element's text ("key . parts" as nft reads it) is split at
// its first " . ": the first part (an address, the very string the Service holds) and the rest
// (" . tcp . 80", the same for all of a port's addresses). The store is a map per container and
// rest, keyed by the first part; a port keeps its elements as runs of consecutive elements that
// share container and rest, each run holding its first parts only, in one flat array per port.

import type { NftTransaction } from "../../host/nft/transaction.ts";
import { collectYoungGarbage } from "../../runtime.ts";
import type { PortElement } from "./port-rules.ts";
import { StringTable } from "./string-table.ts";

/** An element more than one port needs. */
interface Shared {
  value: string;
  refs: number;
}

/** First part -> the element's value text, or a Shared record while several ports need it. */
type Entries = StringTable<string | Shared>;

const SEP = " . ";

/**
 * Elements of one port written between two young collections: each leaves its operation and
 * line behind, and a port of 100,000 externalIPs piled ~60 MB of them before the runtime got to
 * them.
 */
const ELEMENTS_PER_COLLECTION = 16_384;

/** The value as one text ("" for a set's element); a one-part value is its part, not a copy. */
function valueText(e: PortElement): string {
  if (!e.value) return "";
  return e.value.length === 1 ? e.value[0]! : e.value.join(SEP);
}

/**
 * A port's elements as kept for releasing them later. Consecutive elements with the same
 * container and rest are a run, kept as three slots: the container, the rest (the text after
 * the first part, from its " . " on; "" when there is none) and each element's first part, in
 * order (one element's alone: most runs have one). No object per run: a Service of 100,000
 * ports holds two runs per port.
 */
export interface HeldElements {
  readonly runs: readonly (string | readonly string[])[];
}

/** Slots per run in HeldElements.runs. */
const RUN_SLOTS = 3;

/**
 * The element's text split at its first " . ": [first, rest, plain]. A key whose parts hold no
 * space (every real one: plain) can have a " . " only between parts: that is its first part and
 * the rest of its parts. Any other is split from its text (a " . " may span two of its parts).
 */
function splitKey(key: readonly string[]): [string, string, boolean] {
  let plain = true;
  for (const k of key) if (k.includes(" ")) plain = false;
  // The rest is kept: as one flat string, which a join of ["", parts...] makes (a concatenation
  // would be kept as a tree of its parts).
  if (plain) return [key[0]!, key.length === 1 ? "" : ["", ...key.slice(1)].join(SEP), true];
  const text = key.join(SEP);
  const at = text.indexOf(SEP);
  return at < 0 ? [text, "", false] : [text.slice(0, at), text.slice(at), false];
}

/** Whether `key` (of `container`) has no space and the same parts after the first as `sample`'s. */
function sameRest(
  runContainer: string,
  sample: readonly string[],
  container: string,
  key: readonly string[],
): boolean {
  if (runContainer !== container || key.length !== sample.length) return false;
  for (let i = 1; i < key.length; i++) if (key[i] !== sample[i]) return false;
  return !key[0]!.includes(" ");
}

function elementOf(
  container: string,
  key: readonly string[],
  value: readonly string[] | undefined,
  comment?: string,
) {
  return {
    kind: "element",
    container,
    key,
    ...(value ? { value } : {}),
    ...(comment ? { comment } : {}),
  } as const;
}

export class ElementStore {
  /** Container -> rest -> the entries. */
  private readonly containers = new Map<string, StringTable<Entries>>();
  private count = 0;

  /** A full sync flushed every container: nothing is known to be there. */
  reset(): void {
    this.containers.clear();
    this.count = 0;
  }

  get size(): number {
    return this.count;
  }

  /**
   * Every element held, as [container, key text, value text] with the key as nft prints it
   * ("10.0.0.1 . tcp . 80") and "" for a set's element (drift checks).
   */
  *elements(): Generator<[string, string, string]> {
    for (const [container, byRest] of this.containers)
      for (const [rest, entries] of byRest.entries())
        for (const [first, entry] of entries.entries())
          yield [container, first + rest, typeof entry === "string" ? entry : entry.value];
  }

  private entriesOf(container: string, rest: string): Entries {
    let byRest = this.containers.get(container);
    if (!byRest) {
      byRest = new StringTable();
      this.containers.set(container, byRest);
    }
    let entries = byRest.get(rest);
    if (!entries) {
      entries = new StringTable();
      byRest.set(rest, entries);
    }
    return entries;
  }

  /** One port needs these elements (ensure each, in order); what it keeps to release them. */
  ensureAll(tx: NftTransaction, elements: readonly PortElement[]): HeldElements {
    const runs: (string | string[])[] = [];
    // The open run: its container, its entries, and the key of its first element while the
    // run is plain (its parts hold no space).
    let container = "";
    let entries: Entries | undefined;
    let sample: readonly string[] | undefined;
    let made = 0;
    for (const e of elements) {
      if (++made % ELEMENTS_PER_COLLECTION === 0) collectYoungGarbage();
      if (entries && sample && sameRest(container, sample, e.container, e.key)) {
        const first = e.key[0]!;
        const last = runs.length - 1;
        const firsts = runs[last]!;
        if (typeof firsts === "string") runs[last] = [firsts, first];
        else firsts.push(first);
        this.ensureIn(tx, entries, first, e);
        continue;
      }
      const [first, rest, plain] = splitKey(e.key);
      sample = plain ? e.key : undefined;
      container = e.container;
      entries = this.entriesOf(container, rest);
      runs.push(container, rest, first);
      this.ensureIn(tx, entries, first, e);
    }
    return { runs };
  }

  /** One port no longer needs the elements it held (release each, in order). */
  releaseAll(tx: NftTransaction, held: HeldElements): void {
    const { runs } = held;
    for (let i = 0; i < runs.length; i += RUN_SLOTS) {
      const container = runs[i] as string;
      const rest = runs[i + 1] as string;
      const firsts = runs[i + 2]!;
      if (typeof firsts === "string") this.releaseIn(tx, container, rest, firsts);
      else for (const first of firsts) this.releaseIn(tx, container, rest, first);
    }
  }

  /** One port needs `e`: added, or replaced when the map holds another value for its key. */
  private ensureIn(tx: NftTransaction, entries: Entries, first: string, e: PortElement): void {
    const value = valueText(e);
    const entry = entries.get(first);
    if (entry === undefined) {
      tx.add(elementOf(e.container, e.key, e.value, e.comment));
      entries.set(first, value);
      this.count++;
      return;
    }
    const shared = typeof entry === "string" ? { value: entry, refs: 1 } : entry;
    if (typeof entry === "string") entries.set(first, shared);
    shared.refs++;
    if (shared.value !== value) {
      tx.delete(elementOf(e.container, e.key, undefined));
      tx.add(elementOf(e.container, e.key, e.value, e.comment));
      shared.value = value;
    }
  }

  /**
   * One port no longer needs the element: deleted when no other port does. Its entries are
   * found again: they stay in the store while any port holds an element of them.
   */
  private releaseIn(tx: NftTransaction, container: string, rest: string, first: string): void {
    const byRest = this.containers.get(container);
    const entries = byRest?.get(rest);
    const entry = entries?.get(first);
    if (!byRest || !entries || entry === undefined) return;
    if (typeof entry !== "string" && --entry.refs > 0) return;
    entries.delete(first);
    this.count--;
    // A rest no element has any more (a port number gone) is forgotten, so churn does not pile up maps.
    if (entries.size === 0) byRest.delete(rest);
    // Written back as one part: the text nft reads is the same.
    tx.delete(elementOf(container, [first + rest], undefined));
  }
}

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
// share container and rest, each run holding its first parts only.

import type { NftTransaction } from "../../host/nft/transaction.ts";
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

/** The value as one text ("" for a set's element); a one-part value is its part, not a copy. */
function valueText(e: PortElement): string {
  if (!e.value) return "";
  return e.value.length === 1 ? e.value[0]! : e.value.join(SEP);
}

/** Consecutive elements of one port with the same container and rest. */
interface Run {
  readonly container: string;
  /** The text after the first part, from its " . " on ("" when there is none). */
  readonly rest: string;
  readonly entries: Entries;
  /** Each element's first part, in order (one element's alone: most runs have one). */
  firsts: string | string[];
}

/** A port's elements as kept for releasing them later. */
export interface HeldElements {
  readonly runs: readonly Run[];
}

/**
 * The element's text split at its first " . ": [first, rest, plain]. A key whose parts hold no
 * space (every real one: plain) can have a " . " only between parts: that is its first part and
 * the rest of its parts. Any other is split from its text (a " . " may span two of its parts).
 */
function splitKey(key: readonly string[]): [string, string, boolean] {
  let plain = true;
  for (const k of key) if (k.includes(" ")) plain = false;
  if (plain) return [key[0]!, key.length === 1 ? "" : SEP + key.slice(1).join(SEP), true];
  const text = key.join(SEP);
  const at = text.indexOf(SEP);
  return at < 0 ? [text, "", false] : [text.slice(0, at), text.slice(at), false];
}

/** Whether `key` (of `container`) has no space and the same parts after the first as `sample`'s. */
function sameRest(run: Run, sample: readonly string[], container: string, key: readonly string[]): boolean {
  if (run.container !== container || key.length !== sample.length) return false;
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
    const runs: Run[] = [];
    let run: Run | undefined;
    // The key of the run's first element while the run is plain (its parts hold no space).
    let sample: readonly string[] | undefined;
    for (const e of elements) {
      if (run && sample && sameRest(run, sample, e.container, e.key)) {
        const first = e.key[0]!;
        if (typeof run.firsts === "string") run.firsts = [run.firsts, first];
        else run.firsts.push(first);
        this.ensureIn(tx, run.entries, first, e);
        continue;
      }
      const [first, rest, plain] = splitKey(e.key);
      sample = plain ? e.key : undefined;
      run = { container: e.container, rest, entries: this.entriesOf(e.container, rest), firsts: first };
      runs.push(run);
      this.ensureIn(tx, run.entries, first, e);
    }
    return { runs };
  }

  /** One port no longer needs the elements it held (release each, in order). */
  releaseAll(tx: NftTransaction, held: HeldElements): void {
    for (const run of held.runs) {
      if (typeof run.firsts === "string") this.releaseIn(tx, run, run.firsts);
      else for (const first of run.firsts) this.releaseIn(tx, run, first);
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

  /** One port no longer needs the element: deleted when no other port does. */
  private releaseIn(tx: NftTransaction, run: Run, first: string): void {
    const entry = run.entries.get(first);
    if (entry === undefined) return;
    if (typeof entry !== "string" && --entry.refs > 0) return;
    run.entries.delete(first);
    this.count--;
    // A rest no element has any more (a port number gone) is forgotten, so churn does not pile up maps.
    if (run.entries.size === 0) {
      const byRest = this.containers.get(run.container);
      if (byRest?.get(run.rest) === run.entries) byRest.delete(run.rest);
    }
    // Written back as one part: the text nft reads is the same.
    tx.delete(elementOf(run.container, [first + run.rest], undefined));
  }
}

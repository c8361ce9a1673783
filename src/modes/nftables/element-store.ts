// The elements this proxier believes are in its sets and maps, so that a sync adds, replaces
// or deletes only the elements that changed. Several service ports may need the same element
// (the cluster IP of a multi-port Service in @cluster-ips): it is counted, and deleted with the
// last port that needed it.
//
// A Service with 20,000 externalIPs x 100 ports needs two million elements, so no string is
// made per element to know it. An element's text ("key . parts" as nft reads it) is split at
// its first " . ": the first part (an address, the very string the Service holds) and the rest
// (" . tcp . 80", the same for all of a port's addresses). The store is a map per container and
// rest, keyed by the first part; a port keeps its elements as the runs port-rules made them in
// (elements of one container and rest), each holding its first parts only: for a port's
// addresses, the Service's own list.

import type { NftElementDeleteRun, NftElementRun, NftTransaction } from "../../host/nft/transaction.ts";
import { collectYoungGarbage } from "../../runtime.ts";
import type { PortElements } from "./port-rules.ts";
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

/**
 * Elements of one port between two pauses of ensureAll and releaseAll: about a block of nft's
 * input, so a port of 100,000 externalIPs is read by nft as it is written, not held as text.
 */
const ELEMENTS_PER_STEP = 2048;

/** The value as one text ("" for a set's element); a one-part value is its part, not a copy. */
function valueText(value: readonly string[] | undefined): string {
  if (!value) return "";
  return value.length === 1 ? value[0]! : value.join(SEP);
}

/** An element's key parts. */
function keyOf(first: string, rest: readonly string[]): readonly string[] {
  return rest.length === 0 ? [first] : [first, ...rest];
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
 * The text of parts after the first, from its " . " on ("" for none): one flat string, which a
 * join of ["", parts...] makes (a concatenation would be kept as a tree of its parts).
 * Undefined when a part holds a space: a " . " could then span two parts.
 */
function plainRest(rest: readonly string[]): string | undefined {
  if (anyHasSpace(rest)) return undefined;
  return rest.length === 0 ? "" : ["", ...rest].join(SEP);
}

function anyHasSpace(parts: readonly string[]): boolean {
  for (const k of parts) if (k.includes(" ")) return true;
  return false;
}

/** An element's text split at its first " . ": [first, rest]. */
function splitText(key: readonly string[]): [string, string] {
  const text = key.join(SEP);
  const at = text.indexOf(SEP);
  return at < 0 ? [text, ""] : [text.slice(0, at), text.slice(at)];
}

/** An element as a delete names it: by its key alone. */
function elementKey(container: string, key: readonly string[]) {
  return { kind: "element", container, key } as const;
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

  /**
   * One port needs these elements (ensure each, in order); returns what it keeps to release
   * them. Pauses every ELEMENTS_PER_STEP elements.
   */
  *ensureAll(tx: NftTransaction, runs: readonly PortElements[]): Generator<void, HeldElements> {
    const held: (string | readonly string[])[] = [];
    let made = 0;
    // Counts one more element made; true when a pause is due.
    const due = () => {
      if (++made % ELEMENTS_PER_COLLECTION === 0) collectYoungGarbage();
      return made % ELEMENTS_PER_STEP === 0;
    };
    for (const run of runs) {
      const value = valueText(run.value);
      const rest = plainRest(run.rest);
      // Made when the first element is added: a port's elements are usually there already.
      let text: NftElementRun | undefined;
      const add = (first: string) => {
        text ??= tx.elementRun(run.container, run.rest, run.value, run.comment || undefined);
        tx.addRunElement(text, first);
      };
      if (rest !== undefined && !anyHasSpace(run.firsts)) {
        const entries = this.entriesOf(run.container, rest);
        held.push(run.container, rest, run.firsts.length === 1 ? run.firsts[0]! : run.firsts);
        for (const first of run.firsts) {
          this.ensureIn(tx, entries, first, run, value, first, add);
          if (due()) yield;
        }
        continue;
      }
      // A part with a space (no API server would accept one): each element split from its text.
      for (const first of run.firsts) {
        const [textFirst, textRest] = splitText(keyOf(first, run.rest));
        held.push(run.container, textRest, textFirst);
        this.ensureIn(tx, this.entriesOf(run.container, textRest), textFirst, run, value, first, add);
        if (due()) yield;
      }
    }
    return { runs: held };
  }

  /** One port no longer needs the elements it held (release each, in order; pausing as ensureAll). */
  *releaseAll(tx: NftTransaction, held: HeldElements): Generator<void> {
    const { runs } = held;
    let released = 0;
    for (let i = 0; i < runs.length; i += RUN_SLOTS) {
      const container = runs[i] as string;
      const rest = runs[i + 1] as string;
      const firsts = runs[i + 2]!;
      // Made when the first element goes: elements another port still needs stay.
      let deletes: NftElementDeleteRun | undefined;
      const remove = (first: string) => {
        deletes ??= tx.deleteRun(container, rest);
        tx.deleteRunElement(deletes, first);
      };
      if (typeof firsts === "string") this.releaseIn(container, rest, firsts, remove);
      else
        for (const first of firsts) {
          this.releaseIn(container, rest, first, remove);
          if (++released % ELEMENTS_PER_STEP === 0) yield;
        }
    }
  }

  /**
   * One port needs the element of `run` whose first part is `first` (`keyFirst` as written,
   * `first` as stored): added (by `add`), or deleted and added again when the map holds another
   * value for its key.
   */
  private ensureIn(
    tx: NftTransaction,
    entries: Entries,
    first: string,
    run: PortElements,
    value: string,
    keyFirst: string,
    add: (keyFirst: string) => void,
  ): void {
    const entry = entries.get(first);
    if (entry === undefined) {
      add(keyFirst);
      entries.set(first, value);
      this.count++;
      return;
    }
    const shared = typeof entry === "string" ? { value: entry, refs: 1 } : entry;
    if (typeof entry === "string") entries.set(first, shared);
    shared.refs++;
    if (shared.value !== value) {
      tx.delete(elementKey(run.container, keyOf(keyFirst, run.rest)));
      add(keyFirst);
      shared.value = value;
    }
  }

  /**
   * One port no longer needs the element: deleted when no other port does. Its entries are
   * found again: they stay in the store while any port holds an element of them.
   */
  private releaseIn(container: string, rest: string, first: string, remove: (first: string) => void): void {
    const byRest = this.containers.get(container);
    const entries = byRest?.get(rest);
    const entry = entries?.get(first);
    if (!byRest || !entries || entry === undefined) return;
    if (typeof entry !== "string" && --entry.refs > 0) return;
    entries.delete(first);
    this.count--;
    // A rest no element has any more (a port number gone) is forgotten, so churn does not pile up maps.
    if (entries.size === 0) byRest.delete(rest);
    remove(first);
  }
}

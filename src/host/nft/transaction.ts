// One nftables transaction: typed operations rendered, as they are added, to the lines `nft -f`
// reads. nft applies the whole input atomically, so a sync is one transaction and a failing line
// leaves the table as it was. Text is kept rather than objects, joined into blocks of lines as
// it grows: a 10,000-Service sync adds half a million operations, and half a million small
// strings would cost more than the text itself. The blocks go to nft as they are, never joined.
// A deferred part (defer) is written only when nft has read up to it, block by block, so the
// bulk of a big sync never exists as text all at once.

import { flatString } from "../../util/flat-string.ts";
import { HostInputError } from "../errors.ts";
import { nftComment, nftElementPart, nftIdentifier, nftStatement } from "./script-text.ts";
import type { NftFamily, NftObject, NftOperation, NftTransactionLike, NftVerb } from "./types.ts";

function block(parts: readonly (string | undefined)[]): string {
  const present = parts.filter((p): p is string => p !== undefined);
  return present.length === 0 ? "" : ` { ${present.join(" ; ")} ; }`;
}

/** Lines joined into one block at a time. */
const BLOCK_LINES = 2048;

/**
 * A part of a transaction made only when nft reads that far: it adds its operations to the
 * transaction, yielding whenever a share of them is in (the finished blocks then go to nft).
 */
export type NftProducer = (tx: NftTransaction) => Iterable<unknown>;

/**
 * What the elements of one run (a set or map, key parts after the first, value and comment)
 * share, checked and rendered once by elementRun: each element's line is then the head, its
 * first key part and the tail, and no text is made per element (a Service's 100,000
 * externalIPs are 100,000 lines).
 */
export interface NftElementRun {
  readonly container: string;
  readonly rest: readonly string[];
  readonly value: readonly string[] | undefined;
  readonly comment: string | undefined;
  /** "add element FAMILY TABLE CONTAINER { " */
  readonly head: string;
  /** The rest of the key, the comment and the value, then " }" and the newline. */
  readonly tail: string;
  /** Whether the observer is told of each element. */
  readonly observed: boolean;
}

/**
 * What deletes of one container's elements whose keys end alike share, checked and rendered
 * once by deleteRun: each delete's line is then the head, the element's first key part and the
 * tail (deleting a Service's 100,000 externalIPs makes no object or text per element).
 */
export interface NftElementDeleteRun {
  readonly container: string;
  /** " . " and the key's later parts, as the elements were written ("" for keys of one part). */
  readonly restText: string;
  /** "delete element FAMILY TABLE CONTAINER { " */
  readonly head: string;
  /** The rest of the key, then " }" and the newline. */
  readonly tail: string;
  /** Whether the observer is told of each delete. */
  readonly observed: boolean;
}

export class NftTransaction implements NftTransactionLike {
  /** Finished blocks (each ending in a newline) and parts still to be produced, in order. */
  private parts: (string | NftProducer)[] = [];
  /** Blocks a producer finished that nft has not been given yet. */
  private produced: string[] = [];
  private producing = false;
  /** The lines of the open block as fragments, each line's last one its newline. */
  private lines: string[] = [];
  private lineCount = 0;
  private count = 0;
  private sealed = false;
  private consumed = false;
  private readonly where: string;
  /** The operations themselves, when asked to keep them (see operations()). */
  private kept: NftOperation[] | undefined;
  private readonly observe: ((op: NftOperation) => void) | undefined;
  private readonly observesElementsOf: ((container: string) => boolean) | undefined;

  /**
   * `keepOperations`: also keep the typed operations, for a writer that speaks the kernel's
   * netlink rather than nft's text (a partial sync's few; a full sync's would be half a million).
   * `observe`: told of each operation as it is added (a record of what was written), parts
   * made as nft reads them included; except, with `observesElementsOf`, the elements of runs
   * (addRunElement) into containers it says no to.
   */
  constructor(
    readonly family: NftFamily,
    readonly table: string,
    opts: {
      keepOperations?: boolean;
      observe?: (op: NftOperation) => void;
      observesElementsOf?: (container: string) => boolean;
    } = {},
  ) {
    this.where = `${family} ${nftIdentifier(table, "table name")}`;
    if (opts.keepOperations) this.kept = [];
    this.observe = opts.observe;
    this.observesElementsOf = opts.observesElementsOf;
  }

  /**
   * Every operation, in order, when the transaction was made to keep them and holds no part
   * made as nft reads it; else undefined.
   */
  operations(): readonly NftOperation[] | undefined {
    return this.parts.some((p) => typeof p !== "string") ? undefined : this.kept;
  }

  /** Operations so far (a producer's count only once it ran). */
  get size(): number {
    return this.count;
  }

  isEmpty(): boolean {
    return this.count === 0 && !this.parts.some((p) => typeof p !== "string");
  }

  add(object: NftObject): this {
    return this.push("add", object);
  }

  flush(object: NftObject): this {
    return this.push("flush", object);
  }

  delete(object: NftObject): this {
    return this.push("delete", object);
  }

  push(verb: NftVerb, object: NftObject): this {
    this.checkOpen();
    const op = { verb, object };
    // Rendered even when kept: every name and text is checked here, whichever writer sends it.
    this.lines.push(renderOperation(this.where, op), "\n");
    if (this.kept && !this.producing) this.kept.push(op);
    this.observe?.(op);
    return this.counted();
  }

  /** The shared part of a run's elements, checked as push checks an element (see NftElementRun). */
  elementRun(
    container: string,
    rest: readonly string[],
    value?: readonly string[],
    comment?: string,
  ): NftElementRun {
    const name = nftIdentifier(container, "set or map name");
    let tail = "";
    for (const k of rest) tail += ` . ${nftElementPart(k, "element key")}`;
    if (comment !== undefined) tail += ` comment ${nftComment(comment)}`;
    if (value) tail += ` : ${value.map((v) => nftElementPart(v, "element value")).join(" . ")}`;
    return {
      container,
      rest,
      value,
      comment,
      head: flatString(`add element ${this.where} ${name} { `),
      tail: flatString(`${tail} }\n`),
      observed: this.observesElements(container),
    };
  }

  /** Whether the observer is told of `container`'s elements written by runs. */
  private observesElements(container: string): boolean {
    return this.observe !== undefined && (this.observesElementsOf?.(container) ?? true);
  }

  /** Adds the element of `run` whose key starts with `first`: the line push would write. */
  addRunElement(run: NftElementRun, first: string): this {
    return this.runLine(run, first, () => ({
      verb: "add",
      object: {
        kind: "element",
        container: run.container,
        key: [first, ...run.rest],
        ...(run.value ? { value: run.value } : {}),
        ...(run.comment !== undefined ? { comment: run.comment } : {}),
      },
    }));
  }

  /**
   * The shared part of deleting `container`'s elements whose keys end in `restText` (see
   * NftElementDeleteRun), checked as push checks a delete of the key `first + restText`.
   */
  deleteRun(container: string, restText: string): NftElementDeleteRun {
    const name = nftIdentifier(container, "set or map name");
    if (restText !== "") nftElementPart(restText, "element key");
    return {
      container,
      restText,
      head: flatString(`delete element ${this.where} ${name} { `),
      tail: flatString(`${restText} }\n`),
      observed: this.observesElements(container),
    };
  }

  /** Deletes the element of `run` whose key starts with `first`: the line push would write. */
  deleteRunElement(run: NftElementDeleteRun, first: string): this {
    return this.runLine(run, first, () => ({
      verb: "delete",
      object: { kind: "element", container: run.container, key: [first + run.restText] },
    }));
  }

  /** One element's line of a run; its typed operation is made only when kept or observed. */
  private runLine(
    run: { readonly head: string; readonly tail: string; readonly observed: boolean },
    first: string,
    operation: () => NftOperation,
  ): this {
    this.checkOpen();
    this.lines.push(run.head, nftElementPart(first, "element key"), run.tail);
    const keep = this.kept !== undefined && !this.producing;
    if (keep || run.observed) {
      const op = operation();
      if (keep) this.kept!.push(op);
      if (run.observed) this.observe!(op);
    }
    return this.counted();
  }

  private checkOpen(): void {
    if (this.sealed && !this.producing)
      throw new Error("nft: a transaction handed to nft takes no more operations");
  }

  private counted(): this {
    this.count++;
    if (++this.lineCount >= BLOCK_LINES) this.closeBlock();
    return this;
  }

  /**
   * Adds a part that `produce` writes only when nft has read everything before it: a big sync
   * is then never held as text, only the block nft is reading.
   */
  defer(produce: NftProducer): this {
    if (this.sealed) throw new Error("nft: a transaction handed to nft takes no more operations");
    this.closeBlock();
    this.parts.push(produce);
    this.kept = undefined;
    return this;
  }

  /**
   * The input for `nft -f` in blocks of lines, as it is written to nft; no more operations after.
   * With deferred parts it is made as it is read, so it can be read once (render() keeps it).
   */
  pieces(): Iterable<string> {
    this.seal();
    if (this.parts.every((p) => typeof p === "string")) return this.parts as string[];
    if (this.consumed) throw new Error("nft: a transaction made as it is read can be read once");
    this.consumed = true;
    return this.stream();
  }

  /** The input for `nft -f`, one operation per line, as one string (tests, traces). */
  render(): string {
    const blocks = [...this.pieces()];
    // Produced once: what was made is kept for whoever reads it next.
    this.parts = blocks;
    this.consumed = false;
    return blocks.join("");
  }

  private seal(): void {
    if (this.sealed) return;
    this.closeBlock();
    this.sealed = true;
  }

  private *stream(): Generator<string> {
    for (const part of this.parts) {
      if (typeof part === "string") {
        yield part;
        continue;
      }
      this.producing = true;
      try {
        for (const _ of part(this)) {
          // A step may add nothing (a port whose elements the table holds already): the reader
          // is handed an empty piece then, so it can still pause between steps. A partial sync
          // that rewrites 100,000 unchanged ports would otherwise be one 2 s block.
          if (this.produced.length === 0) yield "";
          else yield* this.takeProduced();
        }
        this.closeBlock();
        yield* this.takeProduced();
      } finally {
        this.producing = false;
      }
    }
  }

  private *takeProduced(): Generator<string> {
    while (this.produced.length > 0) yield this.produced.shift()!;
  }

  private closeBlock(): void {
    if (this.lineCount === 0) return;
    // One join of the fragments, newlines included: a template adding the last newline would
    // make a rope whose flattening, when nft is fed, copies the whole text once more (60 MB at
    // 10,000 Services) and leaves the joined half as old garbage.
    const block = this.lines.join("");
    this.lines = [];
    this.lineCount = 0;
    if (this.producing) this.produced.push(block);
    else this.parts.push(block);
  }
}

function typeToAdd(o: { readonly name: string; readonly type?: string }): string {
  if (!o.type) throw new Error(`nft: set or map ${o.name} needs a type to be added`);
  return nftStatement(o.type, "set type");
}

function wholeNumber(n: number, what: string): number {
  if (!Number.isSafeInteger(n)) throw new HostInputError("nft", what, String(n), "not a whole number");
  return n;
}

/**
 * One operation as nft reads it; `where` is "family table". Every name, comment and piece of
 * free text goes through script-text.ts: what nft would not read as meant is refused there.
 */
export function renderOperation(where: string, op: NftOperation): string {
  const { verb, object: o } = op;
  const comment = o.comment === undefined ? undefined : `comment ${nftComment(o.comment)}`;
  const full = verb === "add";
  switch (o.kind) {
    case "table":
      return `${verb} table ${where}${full ? block([comment]) : ""}`;
    case "chain": {
      const name = nftIdentifier(o.name, "chain name");
      const base =
        o.base &&
        `type ${o.base.type} hook ${o.base.hook} priority ${wholeNumber(o.base.priority, "priority")}`;
      return `${verb} chain ${where} ${name}${full ? block([base, comment]) : ""}`;
    }
    case "rule":
      if (verb !== "add") throw new Error(`nft: cannot ${verb} a rule by its text (chain ${o.chain})`);
      return `add rule ${where} ${nftIdentifier(o.chain, "chain name")} ${nftStatement(o.rule)}${comment ? ` ${comment}` : ""}`;
    case "set": {
      const name = nftIdentifier(o.name, "set name");
      const flags = o.flags?.length ? `flags ${o.flags.join(",")}` : undefined;
      const timeout =
        o.timeoutSeconds === undefined ? undefined : `timeout ${wholeNumber(o.timeoutSeconds, "timeout")}s`;
      const spec = full ? block([`type ${typeToAdd(o)}`, flags, timeout, comment]) : "";
      return `${verb} set ${where} ${name}${spec}`;
    }
    case "map": {
      const name = nftIdentifier(o.name, "map name");
      return `${verb} map ${where} ${name}${full ? block([`type ${typeToAdd(o)}`, comment]) : ""}`;
    }
    case "element": {
      if (verb === "flush") throw new Error(`nft: cannot flush an element (of ${o.container})`);
      const container = nftIdentifier(o.container, "set or map name");
      let text = o.key.map((k) => nftElementPart(k, "element key")).join(" . ");
      if (full && comment) text += ` ${comment}`;
      if (full && o.value) text += ` : ${o.value.map((v) => nftElementPart(v, "element value")).join(" . ")}`;
      return `${verb} element ${where} ${container} { ${text} }`;
    }
  }
}

// One nftables transaction: typed operations rendered, as they are added, to the lines `nft -f`
// reads. nft applies the whole input atomically, so a sync is one transaction and a failing line
// leaves the table as it was. Text is kept rather than objects, joined into blocks of lines as
// it grows: a 10,000-Service sync adds half a million operations, and half a million small
// strings would cost more than the text itself. The blocks go to nft as they are, never joined.

import type { NftFamily, NftObject, NftOperation, NftTransactionLike, NftVerb } from "./types.ts";

/** nft keeps at most 128 bytes of a comment; quotes would end it early. */
function quoteComment(comment: string): string {
  return `"${comment.replaceAll('"', "'").slice(0, 128)}"`;
}

function block(parts: readonly (string | undefined)[]): string {
  const present = parts.filter((p): p is string => p !== undefined);
  return present.length === 0 ? "" : ` { ${present.join(" ; ")} ; }`;
}

/** Lines joined into one block at a time. */
const BLOCK_LINES = 2048;

export class NftTransaction implements NftTransactionLike {
  /** Finished blocks, each ending in a newline. */
  private blocks: string[] = [];
  private lines: string[] = [];
  private count = 0;
  private sealed = false;
  private readonly where: string;

  constructor(
    readonly family: NftFamily,
    readonly table: string,
  ) {
    this.where = `${family} ${table}`;
  }

  /** Operations so far. */
  get size(): number {
    return this.count;
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
    if (this.sealed) throw new Error("nft: a transaction handed to nft takes no more operations");
    this.lines.push(renderOperation(this.where, { verb, object }));
    this.count++;
    if (this.lines.length >= BLOCK_LINES) this.closeBlock();
    return this;
  }

  /** The input for `nft -f` in blocks of lines, as it is written to nft; no more operations after. */
  pieces(): readonly string[] {
    this.closeBlock();
    this.sealed = true;
    return this.blocks;
  }

  /** The input for `nft -f`, one operation per line, as one string (tests, traces). */
  render(): string {
    return this.pieces().join("");
  }

  private closeBlock(): void {
    if (this.lines.length === 0) return;
    this.blocks.push(`${this.lines.join("\n")}\n`);
    this.lines = [];
  }
}

function typeToAdd(o: { readonly name: string; readonly type?: string }): string {
  if (!o.type) throw new Error(`nft: set or map ${o.name} needs a type to be added`);
  return o.type;
}

/** One operation as nft reads it; `where` is "family table". */
export function renderOperation(where: string, op: NftOperation): string {
  const { verb, object: o } = op;
  const comment = o.comment === undefined ? undefined : `comment ${quoteComment(o.comment)}`;
  const full = verb === "add";
  switch (o.kind) {
    case "table":
      return `${verb} table ${where}${full ? block([comment]) : ""}`;
    case "chain": {
      const base = o.base && `type ${o.base.type} hook ${o.base.hook} priority ${o.base.priority}`;
      return `${verb} chain ${where} ${o.name}${full ? block([base, comment]) : ""}`;
    }
    case "rule":
      if (verb !== "add") throw new Error(`nft: cannot ${verb} a rule by its text (chain ${o.chain})`);
      return `add rule ${where} ${o.chain} ${o.rule}${comment ? ` ${comment}` : ""}`;
    case "set": {
      const flags = o.flags?.length ? `flags ${o.flags.join(",")}` : undefined;
      const timeout = o.timeoutSeconds === undefined ? undefined : `timeout ${o.timeoutSeconds}s`;
      const spec = full ? block([`type ${typeToAdd(o)}`, flags, timeout, comment]) : "";
      return `${verb} set ${where} ${o.name}${spec}`;
    }
    case "map":
      return `${verb} map ${where} ${o.name}${full ? block([`type ${typeToAdd(o)}`, comment]) : ""}`;
    case "element": {
      if (verb === "flush") throw new Error(`nft: cannot flush an element (of ${o.container})`);
      let text = o.key.join(" . ");
      if (full && comment) text += ` ${comment}`;
      if (full && o.value) text += ` : ${o.value.join(" . ")}`;
      return `${verb} element ${where} ${o.container} { ${text} }`;
    }
  }
}

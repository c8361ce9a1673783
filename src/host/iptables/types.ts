// The typed iptables client both proxiers use. One client per IP family; the backend (legacy
// or nft) is chosen once at startup. Implementations: the real one over Exec, and a stateful
// fake that applies restore input to in-memory tables (fake.ts).

import { inputText } from "../../exec/types.ts";
import type { IPFamily } from "../../util/net/family.ts";

export type IptablesBackend = "legacy" | "nft";
export type Table = "filter" | "nat" | "mangle" | "raw" | "security";
export type RulePosition = "prepend" | "append";

/**
 * An iptables-restore input: one text, or its pieces in order (concatenated, with nothing added
 * between them, they are the text). Pieces let a big input go to the tool without ever being
 * one string: a sync's blocks are written as they are, and may be made only as they are read.
 * Pieces that are not an array must give the same text each time they are read.
 */
export type RestoreInput = string | Iterable<string>;

/** The whole input as one text (a copy when it comes in pieces: for tests and small inputs). */
export function restoreInputText(input: RestoreInput): string {
  return inputText(input);
}

/**
 * The input's length in UTF-16 code units, as `restoreInputText(input).length`; undefined for
 * pieces made as they are read (counting would make them all).
 */
export function restoreInputLength(input: RestoreInput): number | undefined {
  if (typeof input === "string") return input.length;
  if (!Array.isArray(input)) return undefined;
  let n = 0;
  for (const piece of input) n += piece.length;
  return n;
}

export interface RestoreOptions {
  /** --noflush: only the chains named in the input are flushed (and created if missing). */
  readonly noFlush: boolean;
  /** --counters: restore packet/byte counters given in the input. */
  readonly counters: boolean;
}

export interface IptablesClient {
  readonly family: IPFamily;
  readonly backend: IptablesBackend;
  /**
   * iptables-save -t TABLE output; with `only`, possibly just its lines that start with
   * only.linesStartingWith (a client may return them all: callers pick their lines out).
   */
  save(table: Table, only?: { linesStartingWith: string }): Promise<string>;
  /** iptables-save of every table. */
  saveAll(): Promise<string>;
  /** One atomic iptables-restore of `data` (which holds its own *table / COMMIT sections). */
  restoreAll(data: RestoreInput, opts: RestoreOptions): Promise<void>;
  /** Creates the chain if missing; resolves true when it already existed. */
  ensureChain(table: Table, chain: string): Promise<boolean>;
  chainExists(table: Table, chain: string): Promise<boolean>;
  flushChain(table: Table, chain: string): Promise<void>;
  /** Deletes an (empty, unreferenced) chain; missing is not an error. */
  deleteChain(table: Table, chain: string): Promise<void>;
  /**
   * `-C` then `-I`/`-A`; resolves true when the rule already existed. `known.absent` skips the
   * `-C` when the caller knows the rule cannot exist (it jumps to a chain just created: no rule
   * can name a chain that did not exist).
   */
  ensureRule(
    position: RulePosition,
    table: Table,
    chain: string,
    args: readonly string[],
    known?: { readonly absent?: boolean },
  ): Promise<boolean>;
  /** Deletes the rule if present; missing is not an error. */
  deleteRule(table: Table, chain: string, args: readonly string[]): Promise<void>;
  /** e.g. "1.8.9". */
  version(): Promise<string>;
  /** Whether MASQUERADE --random-fully is supported (iptables >= 1.6.2 and kernel support). */
  hasRandomFully(): Promise<boolean>;
}

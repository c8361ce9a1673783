// The committed port states of one family in output order (ascending id), plus their top-level
// rules joined in chunks. A partial sync after an endpoint change then writes each untouched
// chunk as a few strings and revisits only the changed ports: its cost follows the change, not
// the number of Services (touching every port's objects on a large heap is what makes a naive
// walk slow). A port's text that is long already is not joined again (no second copy of it).

import { OWN_BLOCK_CHARS } from "./line-blocks.ts";
import type { NatText, PortState } from "./port-state.ts";

/** Ports per chunk: small enough that rebuilding a dirty chunk is cheap. */
export const CHUNK_SIZE = 128;

export interface Chunk {
  /** The ports' filter texts: short ones joined by newlines, long ones as they are (LineBlocks). */
  readonly filterTexts: readonly string[];
  readonly filterLines: number;
  /** The same for nat; a port whose lines are written as they are read stays on its own. */
  readonly natTexts: readonly NatText[];
  readonly natLines: number;
  readonly chainRuleLines: number;
  readonly noLocalInternal: number;
  readonly noLocalExternal: number;
}

function buildChunk(states: readonly PortState[], from: number, to: number): Chunk {
  const filter: string[] = [];
  const nat: NatText[] = [];
  let filterLines = 0;
  let natLines = 0;
  let chainRuleLines = 0;
  let noLocalInternal = 0;
  let noLocalExternal = 0;
  for (let i = from; i < to; i++) {
    const s = states[i]!;
    const extras = s.extras;
    if (extras.filterLines > 0) filter.push(extras.filterText);
    if (s.natLines > 0) nat.push(s.natText);
    filterLines += extras.filterLines;
    natLines += s.natLines;
    chainRuleLines += s.chainRuleLines;
    if (extras.noLocalInternal) noLocalInternal++;
    if (extras.noLocalExternal) noLocalExternal++;
  }
  return {
    filterTexts: joinedRuns(filter),
    filterLines,
    natTexts: joinedRuns(nat),
    natLines,
    chainRuleLines,
    noLocalInternal,
    noLocalExternal,
  };
}

/**
 * Runs of short texts joined by newlines; a long text (OWN_BLOCK_CHARS), or lines written as
 * they are read, stay on their own.
 */
function joinedRuns<T extends NatText>(texts: readonly T[]): (T | string)[] {
  const out: (T | string)[] = [];
  let from = 0;
  for (let i = 0; i <= texts.length; i++) {
    const t = texts[i];
    if (typeof t === "string" && t.length < OWN_BLOCK_CHARS) continue;
    if (i > from) out.push(texts.slice(from, i).join("\n"));
    if (t !== undefined) out.push(t);
    from = i + 1;
  }
  return out;
}

export class PortOrder {
  states: PortState[] = [];
  // Each chunk is joined when a partial sync first reads it, not when the order is committed:
  // a big full sync commits while its payload is still held, and joining every port's text
  // again then would add a copy of them to that sync's peak.
  private chunks: (Chunk | undefined)[] = [];
  private positionsByService = new Map<string, number[]>();
  /** Endpoints of all committed ports (upstream's cluster-size measure). */
  endpointTotal = 0;

  /** Takes a complete new order (full or structural sync). */
  replaceAll(states: PortState[]): void {
    this.states = states;
    this.positionsByService = new Map();
    this.endpointTotal = 0;
    for (let i = 0; i < states.length; i++) {
      const s = states[i]!;
      const positions = this.positionsByService.get(s.serviceKey);
      if (positions) positions.push(i);
      else this.positionsByService.set(s.serviceKey, [i]);
      this.endpointTotal += s.endpointCount;
    }
    this.chunks = new Array<Chunk | undefined>(Math.ceil(states.length / CHUNK_SIZE)).fill(undefined);
  }

  /** How many chunks the order has. */
  get chunkCount(): number {
    return this.chunks.length;
  }

  /** Chunk `c` (positions c * CHUNK_SIZE onwards), joined now if it was not yet. */
  chunk(c: number): Chunk {
    let chunk = this.chunks[c];
    if (!chunk) {
      const from = c * CHUNK_SIZE;
      chunk = buildChunk(this.states, from, Math.min(this.states.length, from + CHUNK_SIZE));
      this.chunks[c] = chunk;
    }
    return chunk;
  }

  /** Replaces some positions (partial sync); only the chunks holding them are joined again. */
  replaceAt(changes: ReadonlyMap<number, PortState>): void {
    const dirtyChunks = new Set<number>();
    for (const [pos, s] of changes) {
      this.endpointTotal += s.endpointCount - this.states[pos]!.endpointCount;
      this.states[pos] = s;
      dirtyChunks.add(Math.floor(pos / CHUNK_SIZE));
    }
    for (const c of dirtyChunks) this.chunks[c] = undefined;
  }

  /** Positions of the ports of the given Services, ascending. */
  positionsOf(serviceKeys: Iterable<string>): number[] {
    const out: number[] = [];
    for (const key of serviceKeys) {
      // One at a time: a Service may have 100,000 positions (too many for a spread).
      for (const pos of this.positionsByService.get(key) ?? []) out.push(pos);
    }
    return out.sort((a, b) => a - b);
  }
}

// The committed port states of one family in output order, plus their top-level rules joined
// in chunks. A partial sync after an endpoint change then writes each untouched chunk as one
// string and revisits only the changed ports: its cost follows the change, not the number of
// Services (touching every port's objects on a large heap is what makes a naive walk slow).

import type { PortState } from "./port-state.ts";

/** Ports per chunk: small enough that rebuilding a dirty chunk is cheap. */
export const CHUNK_SIZE = 128;

export interface Chunk {
  readonly filterText: string;
  readonly filterLines: number;
  readonly natText: string;
  readonly natLines: number;
  readonly chainRuleLines: number;
  readonly noLocalInternal: number;
  readonly noLocalExternal: number;
}

function buildChunk(states: readonly PortState[], from: number, to: number): Chunk {
  const filter: string[] = [];
  const nat: string[] = [];
  let filterLines = 0;
  let natLines = 0;
  let chainRuleLines = 0;
  let noLocalInternal = 0;
  let noLocalExternal = 0;
  for (let i = from; i < to; i++) {
    const s = states[i]!;
    if (s.filterLines > 0) filter.push(s.filterText);
    if (s.natLines > 0) nat.push(s.natText);
    filterLines += s.filterLines;
    natLines += s.natLines;
    chainRuleLines += s.chainRuleLines;
    if (s.noLocalInternal) noLocalInternal++;
    if (s.noLocalExternal) noLocalExternal++;
  }
  return {
    filterText: filter.join("\n"),
    filterLines,
    natText: nat.join("\n"),
    natLines,
    chainRuleLines,
    noLocalInternal,
    noLocalExternal,
  };
}

export class PortOrder {
  states: PortState[] = [];
  chunks: Chunk[] = [];
  readonly byId = new Map<string, PortState>();
  private positionsByService = new Map<string, number[]>();
  /** Endpoints of all committed ports (upstream's cluster-size measure). */
  endpointTotal = 0;

  /** Takes a complete new order (full or structural sync). */
  replaceAll(states: PortState[]): void {
    this.states = states;
    this.byId.clear();
    this.positionsByService = new Map();
    this.endpointTotal = 0;
    for (let i = 0; i < states.length; i++) {
      const s = states[i]!;
      this.byId.set(s.source.id, s);
      const positions = this.positionsByService.get(s.serviceKey);
      if (positions) positions.push(i);
      else this.positionsByService.set(s.serviceKey, [i]);
      this.endpointTotal += s.endpointCount;
    }
    this.chunks = [];
    for (let from = 0; from < states.length; from += CHUNK_SIZE) {
      this.chunks.push(buildChunk(states, from, Math.min(states.length, from + CHUNK_SIZE)));
    }
  }

  /** Replaces some positions (partial sync); only the chunks holding them are rebuilt. */
  replaceAt(changes: ReadonlyMap<number, PortState>): void {
    const dirtyChunks = new Set<number>();
    for (const [pos, s] of changes) {
      this.endpointTotal += s.endpointCount - this.states[pos]!.endpointCount;
      this.states[pos] = s;
      this.byId.set(s.source.id, s);
      dirtyChunks.add(Math.floor(pos / CHUNK_SIZE));
    }
    for (const c of dirtyChunks) {
      const from = c * CHUNK_SIZE;
      this.chunks[c] = buildChunk(this.states, from, Math.min(this.states.length, from + CHUNK_SIZE));
    }
  }

  /** Positions of the ports of the given Services, ascending. */
  positionsOf(serviceKeys: Iterable<string>): number[] {
    const out: number[] = [];
    for (const key of serviceKeys) {
      const positions = this.positionsByService.get(key);
      if (positions) out.push(...positions);
    }
    return out.sort((a, b) => a - b);
  }
}

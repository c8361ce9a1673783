// The ipset half of a sync: the wanted members of every set against one `ipset save`, as one
// script for one `ipset restore -exist`. Missing sets are created; members are added and deleted
// by difference only, so a quiet sync writes nothing and a one-Service change writes a few lines.
// The script is counted (and every member checked) when planned, and made as ipset reads it: two
// million members are some 80 MB of script that never exists whole.

import { createLine, memberLineHead, memberLineTail } from "../../host/ipset/lines.ts";
import type { IpsetSet } from "../../host/ipset/types.ts";
import type { Logger } from "../../log/logger.ts";
import type { LineSink } from "../../util/line-pieces.ts";
import { streamedPieces } from "../../util/streamed-pieces.ts";
import type { RefCount } from "./desired-state.ts";
import { SET_IDS, type SetCatalog, type SetId } from "./ipsets.ts";

export interface IpsetSyncInput {
  readonly sets: SetCatalog;
  /** Wanted members per set. */
  readonly desired: Readonly<Record<SetId, RefCount>>;
  /** Every set on the host, from listSets(). */
  readonly kernel: ReadonlyMap<string, IpsetSet>;
  readonly logger: Logger;
  /** Partial sync: only these members are compared (sets missing altogether are still made whole). */
  readonly scope?: ReadonlyMap<SetId, ReadonlySet<string>>;
}

export interface IpsetSyncPlan {
  /**
   * Restore input in whole-line pieces (creates first), made as it is read, and again if read
   * again (it reads the kernel's sets and the wanted members then); none when nothing changes.
   */
  readonly script: Iterable<string>;
  readonly lines: number;
  /** Sets with at least one wanted member (their iptables rules are written). */
  readonly nonEmpty: ReadonlySet<SetId>;
}

/** A sink that only counts the lines written to it. */
class LineCount implements LineSink {
  lines = 0;
  part(): void {}
  endLine(): void {
    this.lines++;
  }
}

export function planIpsets(input: IpsetSyncInput): IpsetSyncPlan {
  const nonEmpty = new Set<SetId>();
  const skipped = new Set<SetId>();
  for (const id of SET_IDS) {
    if (input.desired[id].size > 0) nonEmpty.add(id);
    const { spec } = input.sets[id];
    const have = input.kernel.get(spec.name);
    if (!have || compatible(have, spec)) continue;
    input.logger.error("Existing ipset has other parameters; its members are not synced", {
      ipset: spec.name,
      want: spec.type,
      found: `${have.spec.type} family ${have.spec.family}`,
    });
    skipped.add(id);
  }
  // Counting writes every line with its checks: a member ipset would refuse throws here, before
  // ipset has run any of the script.
  const count = new LineCount();
  for (const _ of writeScript(input, skipped, count));
  if (count.lines === 0) return { script: [], lines: 0, nonEmpty };
  return { script: streamedPieces((out) => writeScript(input, skipped, out)), lines: count.lines, nonEmpty };
}

/** The script's lines, creates first; pausable after every line. */
function* writeScript(input: IpsetSyncInput, skipped: ReadonlySet<SetId>, out: LineSink): Generator<void> {
  for (const id of SET_IDS) {
    const { spec } = input.sets[id];
    if (input.kernel.has(spec.name)) continue;
    out.part(createLine(spec));
    out.endLine();
    yield;
  }
  for (const id of SET_IDS) {
    if (skipped.has(id)) continue;
    const want = input.desired[id];
    const { name } = input.sets[id].spec;
    const have = input.kernel.get(name);
    if (!have) yield* memberLines(out, "add", name, want.keys());
    else if (!input.scope) yield* diffMembers(name, want, have.entries, out);
    else yield* diffScoped(name, want, have.entries, input.scope.get(id), out);
  }
}

/** Member lines written between two pauses of the script (a pause per line costs more than it). */
const LINES_PER_PAUSE = 512;

/**
 * "add SET ENTRY" / "del SET ENTRY" lines from the set's head and each member's own (checked)
 * text, for the entries `keep` takes.
 */
function* memberLines(
  out: LineSink,
  verb: "add" | "del",
  name: string,
  entries: Iterable<string>,
  keep?: (entry: string) => boolean,
): Generator<void> {
  const head = memberLineHead(verb, name);
  let written = 0;
  for (const entry of entries) {
    if (keep && !keep(entry)) continue;
    out.part(head);
    out.part(memberLineTail(entry));
    out.endLine();
    if (++written % LINES_PER_PAUSE === 0) yield;
  }
}

/** `create -exist` refuses a set whose type or family differ; so would adding to it. */
function compatible(have: IpsetSet, want: IpsetSet["spec"]): boolean {
  if (have.spec.type !== want.type) return false;
  return want.type === "bitmap:port" || have.spec.family === want.family;
}

// Stale members go first: a set near maxelem then has room for the new ones.
function* diffMembers(
  name: string,
  want: RefCount,
  have: ReadonlySet<string>,
  out: LineSink,
): Generator<void> {
  yield* memberLines(out, "del", name, have, (entry) => !want.has(entry));
  yield* memberLines(out, "add", name, want.keys(), (entry) => !have.has(entry));
}

function* diffScoped(
  name: string,
  want: RefCount,
  have: ReadonlySet<string>,
  scope: ReadonlySet<string> | undefined,
  out: LineSink,
): Generator<void> {
  if (!scope) return;
  yield* memberLines(out, "del", name, scope, (entry) => !want.has(entry) && have.has(entry));
  yield* memberLines(out, "add", name, scope, (entry) => want.has(entry) && !have.has(entry));
}

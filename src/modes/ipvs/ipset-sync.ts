// The ipset half of a sync: the wanted members of every set against one `ipset save`, as one
// script for one `ipset restore -exist`. Missing sets are created; members are added and deleted
// by difference only, so a quiet sync writes nothing and a one-Service change writes a few lines.

import { createLine, memberLineHead, memberLineTail } from "../../host/ipset/lines.ts";
import type { IpsetSet } from "../../host/ipset/types.ts";
import type { Logger } from "../../log/logger.ts";
import { LinePieces } from "../../util/line-pieces.ts";
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
  /** Restore input in whole-line pieces (creates first); none when nothing changes. */
  readonly script: readonly string[];
  readonly lines: number;
  /** Sets with at least one wanted member (their iptables rules are written). */
  readonly nonEmpty: ReadonlySet<SetId>;
}

export function planIpsets(input: IpsetSyncInput): IpsetSyncPlan {
  const creates: string[] = [];
  const changes = new LinePieces();
  const nonEmpty = new Set<SetId>();
  for (const id of SET_IDS) {
    const want = input.desired[id];
    if (want.size > 0) nonEmpty.add(id);
    const { spec } = input.sets[id];
    const have = input.kernel.get(spec.name);
    if (!have) {
      creates.push(createLine(spec));
      const add = memberLineHead("add", spec.name);
      for (const entry of want.keys()) memberLine(changes, add, entry);
      continue;
    }
    if (!compatible(have, input.sets[id].spec)) {
      input.logger.error("Existing ipset has other parameters; its members are not synced", {
        ipset: spec.name,
        want: spec.type,
        found: `${have.spec.type} family ${have.spec.family}`,
      });
      continue;
    }
    if (!input.scope) diffMembers(spec.name, want, have.entries, changes);
    else diffScoped(spec.name, want, have.entries, input.scope.get(id), changes);
  }
  const lines = creates.length + changes.lines;
  const script = changes.finish();
  if (creates.length > 0) script.unshift(`${creates.join("\n")}\n`);
  return { script, lines, nonEmpty };
}

/** "add SET ENTRY" / "del SET ENTRY" from the set's head and the member's own (checked) text. */
function memberLine(out: LinePieces, head: string, entry: string): void {
  out.part(head);
  out.part(memberLineTail(entry));
  out.endLine();
}

/** `create -exist` refuses a set whose type or family differ; so would adding to it. */
function compatible(have: IpsetSet, want: IpsetSet["spec"]): boolean {
  if (have.spec.type !== want.type) return false;
  return want.type === "bitmap:port" || have.spec.family === want.family;
}

// Stale members go first: a set near maxelem then has room for the new ones.
function diffMembers(name: string, want: RefCount, have: ReadonlySet<string>, out: LinePieces): void {
  const del = memberLineHead("del", name);
  for (const entry of have) if (!want.has(entry)) memberLine(out, del, entry);
  const add = memberLineHead("add", name);
  for (const entry of want.keys()) if (!have.has(entry)) memberLine(out, add, entry);
}

function diffScoped(
  name: string,
  want: RefCount,
  have: ReadonlySet<string>,
  scope: ReadonlySet<string> | undefined,
  out: LinePieces,
): void {
  if (!scope) return;
  const del = memberLineHead("del", name);
  for (const entry of scope) if (!want.has(entry) && have.has(entry)) memberLine(out, del, entry);
  const add = memberLineHead("add", name);
  for (const entry of scope) if (want.has(entry) && !have.has(entry)) memberLine(out, add, entry);
}

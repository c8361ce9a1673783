// How a partial sync changes a big filter table. That table holds one REJECT or DROP per port
// without (local) endpoints, so one hostile Service with 100,000 ports and no endpoints puts
// 100,000 rules there. Measured with iptables-nft-restore 1.8.9 and such a chain: rewriting it
// takes 2.5 s, deleting one rule 2.3-4.1 s (the tool reads the whole chain to find it),
// appending one 40 ms. So above FILTER_LINES_FOR_EDITS a partial sync whose filter change is
// only new rules appends them, without redeclaring (and so flushing) any chain.
//
// A KUBE-SERVICES rule no longer wanted is left in place ("stale") until the table is next
// written whole: such a rule matches "-d <ClusterIP> --dport <port>" on traffic nat did not
// DNAT (the filter hooks see DNATed destinations), and traffic to a ClusterIP that nat does not
// DNAT has nowhere to go anyway. It is what makes "endpoints arrived" cheap. Stale rules go
// with the first sync one sync period after the first of them went stale (syncs run at least
// that often). Any other removal, or a new rule for a port that has stale ones (a REJECT that
// became a DROP must not stay behind its REJECT), rewrites the table whole. Rules within these
// chains match disjoint traffic, so an appended rule's place at the end of its chain is as good
// as its place in a whole write.

/** Filter lines (in the kernel) from which partial syncs edit the table instead of rewriting it. */
export const FILTER_LINES_FOR_EDITS = 10_000;

/** The only chain whose unwanted rules may stay until the next whole write (see above). */
const DEFERRABLE_PREFIX = "-A KUBE-SERVICES ";

/** One port's filter lines before and after this sync, each joined by newlines ("" for none). */
export interface PortFilterChange {
  readonly portId: string;
  readonly before: string;
  readonly after: string;
}

export interface FilterEditRequest {
  readonly changes: readonly PortFilterChange[];
  readonly nowMs: number;
  /** How long a stale rule may stay (the sync period). */
  readonly maxStaleMs: number;
}

/** What this sync writes to the filter table, and what the kernel then holds beyond the model. */
export interface FilterEdit {
  readonly kind: "none" | "appends" | "whole";
  /** "appends": the "-A" lines to write, in no chain's declaration. */
  readonly appends: readonly string[];
  /** Unwanted KUBE-SERVICES lines the kernel holds after this sync, by the port they came from. */
  readonly stale: ReadonlyMap<string, string>;
  readonly staleSinceMs: number;
}

const WHOLE: FilterEdit = { kind: "whole", appends: [], stale: new Map(), staleSinceMs: 0 };

function linesOf(text: string): string[] {
  return text === "" ? [] : text.split("\n");
}

/** The stale rules the kernel holds since the last successful restore. */
export class FilterEdits {
  private stale: ReadonlyMap<string, string> = new Map();
  private staleSinceMs = 0;

  /** Stale rules in the kernel (counted in the filter table's size). */
  get staleLines(): number {
    return this.stale.size;
  }

  /** A whole write: the table becomes what this sync computed. */
  whole(): FilterEdit {
    return WHOLE;
  }

  /** The edit for a partial sync over a committed table that is big; linear in the change. */
  plan(req: FilterEditRequest): FilterEdit {
    const stale = new Map(this.stale);
    const appends: string[] = [];
    const appendedBy = new Set<string>();
    let changed = false;
    for (const c of req.changes) {
      if (c.before === c.after) continue;
      const before = linesOf(c.before);
      const after = linesOf(c.after);
      const kept = new Set(after);
      for (const line of before) {
        if (kept.has(line)) continue;
        if (!line.startsWith(DEFERRABLE_PREFIX)) return WHOLE;
        stale.set(line, c.portId);
        changed = true;
      }
      const had = new Set(before);
      for (const line of after) {
        if (had.has(line)) continue;
        changed = true;
        if (stale.delete(line)) continue; // still in the kernel
        appends.push(line);
        appendedBy.add(c.portId);
      }
    }
    if (stale.size > 0) {
      for (const port of stale.values()) if (appendedBy.has(port)) return WHOLE;
    }
    const staleSinceMs = this.stale.size > 0 ? this.staleSinceMs : req.nowMs;
    if (stale.size > 0 && req.nowMs - staleSinceMs >= req.maxStaleMs) return WHOLE;
    if (!changed) return { kind: "none", appends, stale: this.stale, staleSinceMs: this.staleSinceMs };
    return { kind: appends.length > 0 ? "appends" : "none", appends, stale, staleSinceMs };
  }

  /** Adopts an edit once its restore succeeded. */
  commit(edit: FilterEdit): void {
    this.stale = edit.stale;
    this.staleSinceMs = edit.stale.size > 0 ? edit.staleSinceMs : 0;
  }
}

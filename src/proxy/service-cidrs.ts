// The ClusterIP ranges of the cluster, from its networking.k8s.io/v1 ServiceCIDR objects: the
// union of every object's spec.cidrs, as upstream's ServiceCIDR handler hands it to the proxier.
// A CIDR that does not parse is skipped and reported (field and value); the others still count.

import { type EventRecorder, nullRecorder } from "../k8s/events.ts";
import type { ServiceCIDRObject } from "../k8s/objects.ts";
import { shownValue, validServiceCIDRName } from "../k8s/validation.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import { compareIPs, parseCIDRLenient } from "../util/net/address.ts";
import { ProblemList, ProblemReporter } from "./problems.ts";

export interface ServiceCIDRSetOptions {
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
}

/** Canonical CIDRs sorted IPv4 first, then by address and prefix. */
function sortCIDRs(cidrs: Iterable<string>): string[] {
  return [...cidrs].sort((a, b) => {
    const [ia = "", pa = ""] = a.split("/");
    const [ib = "", pb = ""] = b.split("/");
    const fa = ia.includes(":") ? 1 : 0;
    const fb = ib.includes(":") ? 1 : 0;
    return fa - fb || compareIPs(ia, ib) || Number(pa) - Number(pb);
  });
}

export class ServiceCIDRSet {
  private readonly byObject = new Map<string, readonly string[]>();
  private union: readonly string[] = [];
  private readonly reporter: ProblemReporter;

  constructor(opts: ServiceCIDRSetOptions = {}) {
    this.reporter = new ProblemReporter(
      opts.logger ?? nullLogger,
      opts.recorder ?? nullRecorder,
      "ReadServiceCIDR",
    );
  }

  /** Every ServiceCIDR's CIDRs, canonical and sorted, without duplicates. */
  get cidrs(): readonly string[] {
    return this.union;
  }

  /** Folds one object's change in; true when the union changed. */
  update(obj: ServiceCIDRObject, removed: boolean): boolean {
    const meta: unknown = obj?.metadata;
    const raw = typeof meta === "object" && meta !== null ? (meta as { name?: unknown }).name : undefined;
    const bad = validServiceCIDRName(raw);
    if (bad) {
      this.refuse(raw, bad, removed);
      return false;
    }
    const name = raw as string;
    if (removed) {
      this.reporter.forget(name);
      if (!this.byObject.delete(name)) return false;
    } else {
      this.byObject.set(name, this.read(obj, name));
    }
    const next = sortCIDRs(new Set([...this.byObject.values()].flat()));
    if (next.length === this.union.length && next.every((c, i) => c === this.union[i])) return false;
    this.union = next;
    return true;
  }

  // A name the API server would refuse: the object is skipped, and said so once (log only).
  private refuse(name: unknown, reason: string, removed: boolean): void {
    const shown = typeof name === "string" && name !== "" ? String(shownValue(name)) : "<unnamed>";
    const key = `invalid-name:${shown}`;
    if (removed) {
      this.reporter.forget(key);
      return;
    }
    const problems = new ProblemList({ kind: "ServiceCIDR", name: shown });
    problems.note("metadata.name", shownValue(name), `${reason}; ServiceCIDR ignored`);
    this.reporter.report(key, problems);
  }

  private read(obj: ServiceCIDRObject, name: string): string[] {
    const problems = new ProblemList({
      kind: "ServiceCIDR",
      name,
      ...(typeof obj.metadata?.uid === "string" ? { uid: obj.metadata.uid } : {}),
    });
    const spec: unknown = obj.spec;
    const raw = typeof spec === "object" && spec !== null ? (spec as { cidrs?: unknown }).cidrs : undefined;
    const out: string[] = [];
    if (raw !== undefined && !Array.isArray(raw))
      problems.invalid("spec.cidrs", shownValue(raw), "not a list; ServiceCIDR skipped");
    for (const [i, text] of (Array.isArray(raw) ? raw : []).entries()) {
      const parsed = parseCIDRLenient(text);
      if (parsed) out.push(parsed.cidr);
      else problems.invalid(`spec.cidrs[${i}]`, shownValue(text), "not a CIDR; skipped");
    }
    this.reporter.report(name, problems);
    return out;
  }
}

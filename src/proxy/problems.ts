// Bad fields in Services and EndpointSlices are skipped, never fatal. Each skip is told to the
// operator once (a warning naming object, field path and value, plus a Warning event where one
// is due); informer resyncs re-deliver unchanged objects every few minutes, so the reporter
// remembers what it last said about each object and stays quiet until that changes.

import type { EventRecorder } from "../k8s/events.ts";
import type { ObjectRef } from "../k8s/objects.ts";
import { shownText, shownValue } from "../k8s/validation.ts";
import type { Logger } from "../log/logger.ts";

/** Event reason for a field kube-proxy could not parse (our addition; upstream only logs). */
export const REASON_INVALID_FIELD = "KubeProxyInvalidField";
/** Upstream's event reason for an address of the wrong family. */
export const REASON_INCORRECT_IP_VERSION = "KubeProxyIncorrectIPVersion";

export interface FieldProblem {
  /** The object the event is about (an endpoint of the wrong family is reported on its Service). */
  readonly ref: ObjectRef;
  /** Field path, e.g. "spec.externalIPs[1]". */
  readonly field: string;
  readonly value: unknown;
  /** What is wrong and what was skipped, for the log line and event message. */
  readonly detail: string;
  /** Event reason; undefined: log only. */
  readonly eventReason?: string;
}

/** Problems found while reading one object; reported only if the caller decides to. */
export class ProblemList {
  readonly items: FieldProblem[] = [];

  constructor(readonly ref: ObjectRef) {}

  /** A field that failed to parse: logged, with a KubeProxyInvalidField event. Returns undefined
   * so a reader can `return problems.invalid(...)` in one line. */
  invalid(field: string, value: unknown, detail: string): undefined {
    this.items.push({ ref: this.ref, field, value, detail, eventReason: REASON_INVALID_FIELD });
    return undefined;
  }

  /** Something skipped that upstream only logs (no event). */
  note(field: string, value: unknown, detail: string): undefined {
    this.items.push({ ref: this.ref, field, value, detail });
    return undefined;
  }

  add(problem: FieldProblem): void {
    this.items.push(problem);
  }
}

function refText(ref: ObjectRef): string {
  return ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name;
}

/** Problems told per object; the rest are counted in one summary line. */
const MAX_TOLD_PER_OBJECT = 20;

// Values are cut by shownValue (a hostile field can be megabytes): strings quoted as JSON in
// events and signatures, bare in log fields.
function valueText(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(shownValue(value)) : shownText(value);
}

function shortValue(value: unknown): string {
  return value === undefined ? "<unset>" : shownText(value);
}

function kindKey(ref: ObjectRef): string {
  return ref.kind === "EndpointSlice" ? "endpointSlice" : ref.kind.toLowerCase();
}

export class ProblemReporter {
  private readonly told = new Map<string, string>();

  constructor(
    private readonly logger: Logger,
    private readonly recorder: EventRecorder,
    private readonly action: string,
  ) {}

  /** Tells the problems of `objectKey` unless exactly these were the last ones told. */
  report(objectKey: string, problems: ProblemList): void {
    if (problems.items.length === 0) {
      this.told.delete(objectKey);
      return;
    }
    const shown = problems.items.slice(0, MAX_TOLD_PER_OBJECT);
    const more = problems.items.length - shown.length;
    const signature = `${more}\n${shown.map((p) => `${p.field}=${valueText(p.value)}`).join("\n")}`;
    if (this.told.get(objectKey) === signature) return;
    this.told.set(objectKey, signature);
    for (const p of shown) this.tell(p, problems.ref);
    if (more > 0) {
      this.logger.warn(`Ignoring more invalid ${problems.ref.kind} fields`, {
        [kindKey(problems.ref)]: refText(problems.ref),
        notShown: more,
      });
    }
  }

  /** Forgets an object (deleted), so a recreated one with the same fault is told again. */
  forget(objectKey: string): void {
    this.told.delete(objectKey);
  }

  private tell(p: FieldProblem, source: ObjectRef): void {
    const value = valueText(p.value);
    this.logger.warn(`Ignoring invalid ${source.kind} field: ${p.detail}`, {
      [kindKey(source)]: refText(source),
      field: p.field,
      value: shortValue(p.value),
    });
    if (!p.eventReason) return;
    this.recorder.record({
      ref: p.ref,
      type: "Warning",
      reason: p.eventReason,
      action: this.action,
      message: `${source.kind} ${refText(source)}: ${p.field} ${value}: ${p.detail}`,
    });
  }
}

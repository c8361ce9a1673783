// The --dry-run result (DESIGN.md contract): checks, the mutating commands in order, and the
// desired ipvs table. Text is for people; JSON is for scripts and the node smoke check.

import { stdinPieces } from "../exec/dry-run.ts";
import type { VirtualServerView } from "../modes/ipvs/proxier.ts";
import type { ModeName } from "../modes/registry.ts";
import type { Check } from "../proxy/check.ts";
import { Listing } from "../util/listing.ts";
import { renderServiceListing, ServiceListing, type ServicePortList } from "./service-listing.ts";

export interface PlannedCommand {
  readonly argv: readonly string[];
  readonly stdin?: string;
}

/** One planned IPVS virtual server (DESIGN.md `ipvs.virtualServers`), as ipvs mode plans it. */
export type IpvsVirtualServerPlan = VirtualServerView;

export interface DryRunReport {
  readonly mode: ModeName;
  readonly checks: Check[];
  readonly commands: PlannedCommand[];
  /** The service ports the sync saw, with their endpoints (mode-independent). */
  readonly services: ServicePortList;
  /** Virtual servers as an array, or a Listing that makes each as it is read. */
  readonly ipvs?: { virtualServers: readonly IpvsVirtualServerPlan[] | Listing<IpvsVirtualServerPlan> };
  /** Lines an operator should read (e.g. which cluster source was used). */
  readonly notes: string[];
  /**
   * Warning events a real run would post: on its Node (ipvs's deprecation), on Services the
   * mode cannot program (ipvs mode's sets full).
   */
  readonly events?: readonly PlannedEvent[];
}

export interface PlannedEvent {
  readonly type: "Warning";
  readonly reason: string;
  readonly action: string;
  readonly message: string;
  /** The object it is about, as "Node/<name>" or "Service/<namespace>/<name>". */
  readonly regarding: string;
}

/** 0: every prerequisite met; 3: the plan was computed but a prerequisite failed. */
export function dryRunExitCode(report: DryRunReport): 0 | 3 {
  return report.checks.every((c) => c.ok) ? 0 : 3;
}

export function renderJson(report: DryRunReport): string {
  return [...renderJsonParts(report)].join("");
}

/**
 * renderJson's text in pieces, each made only when it is taken, for writing one after the
 * other: the text is JSON.stringify(report, null, 2) plus a newline, but no whole copy of it
 * exists, nor of any big part of it (a restore input of hundreds of megabytes, a Service listing
 * with a million endpoints). Restore inputs are escaped a slice at a time from the pieces they
 * were recorded in (exec/dry-run.ts stdinPieces); arrays and objects near the top are written
 * an element at a time.
 */
export function* renderJsonParts(report: DryRunReport): Generator<string> {
  const body: Record<string, unknown> = {
    mode: report.mode,
    checks: report.checks,
    commands: report.commands.map((c) => {
      const pieces = stdinPieces(c);
      return pieces === undefined ? { argv: c.argv } : { argv: c.argv, stdin: new JsonText(pieces) };
    }),
  };
  body.services = report.services;
  // Its virtual servers a server at a time: one with 10,000 real servers is a megabyte of text,
  // a hundred of them as one string (and its re-indented copy) hundreds.
  if (report.ipvs) body.ipvs = new Streamed(report.ipvs, STREAMED_DEPTH);
  body.notes = report.notes;
  if (report.events?.length) body.events = report.events;
  yield* coalesced(valueParts(body, "", STREAMED_DEPTH));
  yield "\n";
}

/** A value written `depth` levels deep, wherever it sits in the report. */
class Streamed {
  constructor(
    readonly value: unknown,
    readonly depth: number,
  ) {}
}

/** A string value given as pieces that concatenate to it. */
class JsonText {
  constructor(readonly pieces: readonly string[]) {}
}

/**
 * Levels written a part at a time (the report, then its arrays); each of their elements is one
 * JSON.stringify (a Service port with its endpoints: small), except a command with stdin, whose
 * stdin is written in pieces. Deeper streaming costs more in small strings than it saves.
 */
const STREAMED_DEPTH = 2;

/** Elements of a Listing below the streamed levels that are still written as one JSON.stringify. */
const LISTED_WHOLE = 256;

/** What JSON.stringify leaves out of an object (and writes as null in an array). */
const omitted = (v: unknown) => v === undefined || typeof v === "function" || typeof v === "symbol";

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return (
    typeof v === "object" &&
    v !== null &&
    !Array.isArray(v) &&
    typeof (v as { toJSON?: unknown }).toJSON !== "function"
  );
}

/** A non-empty array's JSON.stringify(items, null, 2) at `indent`, an element at a time. */
function* arrayParts(items: Iterable<unknown>, indent: string, depth: number): Generator<string> {
  const inner = `${indent}  `;
  let first = true;
  for (const v of items) {
    yield `${first ? "[" : ","}\n${inner}`;
    first = false;
    if (omitted(v)) yield "null";
    else yield* valueParts(v, inner, depth - 1);
  }
  yield `\n${indent}]`;
}

/** Whether an object has a value in pieces (a command's stdin): it must be written in parts. */
function holdsText(value: unknown): boolean {
  return isPlainObject(value) && Object.values(value).some((v) => v instanceof JsonText);
}

/** JSON.stringify(value, null, 2) as it reads at `indent`, in pieces, `depth` levels deep. */
function* valueParts(value: unknown, indent: string, depth: number): Generator<string> {
  if (value instanceof JsonText) {
    yield* jsonStringParts(value.pieces);
    return;
  }
  if (value instanceof Streamed) {
    yield* valueParts(value.value, indent, value.depth);
    return;
  }
  // Listed as it is read, one port at a time: as JSON it is the array of its ports.
  if (value instanceof ServiceListing && value.length > 0 && depth > 0) {
    yield* arrayParts(value, indent, depth);
    return;
  }
  // A Listing an element at a time, and a long one however deep it sits: made whole, it would
  // be the very list it exists not to hold (10,000 real servers of one virtual server).
  if (value instanceof Listing && value.length > 0 && (depth > 0 || value.length > LISTED_WHOLE)) {
    yield* arrayParts(value, indent, Math.max(depth, 1));
    return;
  }
  if (depth > 0 && Array.isArray(value) && value.length > 0) {
    yield* arrayParts(value, indent, depth);
    return;
  }
  if ((depth > 0 || holdsText(value)) && isPlainObject(value)) {
    const keys = Object.keys(value).filter((k) => !omitted(value[k]));
    if (keys.length > 0) {
      const inner = `${indent}  `;
      for (let i = 0; i < keys.length; i++) {
        yield `${i === 0 ? "{" : ","}\n${inner}${JSON.stringify(keys[i])}: `;
        yield* valueParts(value[keys[i]!], inner, depth - 1);
      }
      yield `\n${indent}}`;
      return;
    }
  }
  // Strings in JSON text never hold a raw newline: every newline starts an indented line.
  const text = JSON.stringify(value, null, 2) ?? "null";
  yield indent === "" ? text : text.replaceAll("\n", `\n${indent}`);
}

/** Small parts joined into runs of about this many characters; bigger ones pass as they are. */
const RUN_CHARS = 64 * 1024;

function* coalesced(parts: Iterable<string>): Generator<string> {
  let run: string[] = [];
  let chars = 0;
  for (const part of parts) {
    if (part.length >= RUN_CHARS) {
      if (run.length > 0) yield run.join("");
      run = [];
      chars = 0;
      yield part;
      continue;
    }
    run.push(part);
    chars += part.length;
    if (chars >= RUN_CHARS) {
      yield run.join("");
      run = [];
      chars = 0;
    }
  }
  if (run.length > 0) yield run.join("");
}

/** Characters escaped at a time: escaping a 30 MB string in one go is markedly slower. */
const ESCAPE_CHARS = 1 << 20;

/**
 * JSON.stringify(pieces.join("")) in pieces. A surrogate pair is never cut (its halves alone
 * would each be escaped as a lone surrogate): a piece's last high surrogate waits for the next.
 */
function* jsonStringParts(pieces: readonly string[]): Generator<string> {
  yield '"';
  let carry = "";
  for (const piece of pieces) {
    let text = carry === "" ? piece : carry + piece;
    carry = "";
    if (isHighSurrogate(text.charCodeAt(text.length - 1))) {
      carry = text.slice(-1);
      text = text.slice(0, -1);
    }
    for (let from = 0; from < text.length; ) {
      let to = Math.min(text.length, from + ESCAPE_CHARS);
      if (to < text.length && isHighSurrogate(text.charCodeAt(to - 1))) to--;
      yield JSON.stringify(text.slice(from, to)).slice(1, -1);
      from = to;
    }
  }
  if (carry !== "") yield JSON.stringify(carry).slice(1, -1);
  yield '"';
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** Quote an argv element the way a person would type it into a POSIX shell. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`;
}

export function renderCommand(c: PlannedCommand): string {
  const line = c.argv.map(shellQuote).join(" ");
  if (c.stdin === undefined) return line;
  const body = c.stdin.endsWith("\n") ? c.stdin : `${c.stdin}\n`;
  return `${line} <<'EOF'\n${body}EOF`;
}

export function renderText(report: DryRunReport): string {
  const out: string[] = [`kube-proxy-ts dry run: mode ${report.mode}`, "", "Checks:"];
  for (const c of report.checks) out.push(`  [${c.ok ? " OK " : "FAIL"}] ${c.name}: ${c.detail}`);
  for (const n of report.notes) out.push(`  note: ${n}`);
  if (report.events?.length) {
    out.push("", `Events a real run would post (${report.events.length}):`);
    for (const e of report.events)
      out.push(`  ${e.type} ${e.reason} (${e.action}) on ${e.regarding}: ${e.message}`);
  }
  out.push("", ...renderServiceListing(report.services));
  out.push("", `Commands that a real run would execute (${report.commands.length}):`);
  for (const c of report.commands) out.push(renderCommand(c));
  if (report.ipvs) {
    out.push("", `IPVS virtual servers (${report.ipvs.virtualServers.length}):`);
    for (const vs of report.ipvs.virtualServers) {
      const flags = vs.flags.length ? ` flags ${vs.flags.join("|")}` : "";
      const persist = vs.timeout > 0 ? ` persistent ${vs.timeout}s` : "";
      out.push(`  ${vs.protocol} ${vs.address}:${vs.port} ${vs.scheduler}${flags}${persist}`);
      for (const rs of vs.realServers) out.push(`    -> ${rs.address}:${rs.port} weight ${rs.weight}`);
    }
  }
  const code = dryRunExitCode(report);
  out.push(
    "",
    code === 0
      ? "Result: every prerequisite is met (exit 0)."
      : `Result: ${report.checks.filter((c) => !c.ok).length} prerequisite check(s) failed (exit 3).`,
  );
  return `${out.join("\n")}\n`;
}

// The --dry-run result (DESIGN.md contract): checks, the mutating commands in order, and the
// desired ipvs table. Text is for people; JSON is for scripts and the node smoke check.

import type { VirtualServerView } from "../modes/ipvs/proxier.ts";
import type { ModeName } from "../modes/registry.ts";
import type { Check } from "../proxy/check.ts";
import { type ListedServicePort, renderServiceListing } from "./service-listing.ts";

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
  readonly services: ListedServicePort[];
  readonly ipvs?: { virtualServers: IpvsVirtualServerPlan[] };
  /** Lines an operator should read (e.g. which cluster source was used). */
  readonly notes: string[];
  /** Warning events a real run would post on its Node (e.g. ipvs's deprecation). */
  readonly events?: readonly PlannedEvent[];
}

export interface PlannedEvent {
  readonly type: "Warning";
  readonly reason: string;
  readonly action: string;
  readonly message: string;
  /** The object it is about, as "Node/<name>". */
  readonly regarding: string;
}

/** 0: every prerequisite met; 3: the plan was computed but a prerequisite failed. */
export function dryRunExitCode(report: DryRunReport): 0 | 3 {
  return report.checks.every((c) => c.ok) ? 0 : 3;
}

export function renderJson(report: DryRunReport): string {
  return renderJsonParts(report).join("");
}

/**
 * renderJson's text in pieces, for writing one after the other: each restore input is escaped on
 * its own and spliced in where a placeholder stood, so a 30 MB payload never becomes part of one
 * 55 MB string (and its UTF-8 copy) at 10,000 Services. Strings print the same at any depth.
 */
export function renderJsonParts(report: DryRunReport): string[] {
  const stdins: string[] = [];
  // NUL and a per-call nonce: no text of the report itself can look like a placeholder.
  const tag = `\u0000stdin-${Math.random().toString(36).slice(2)}-`;
  const body: Record<string, unknown> = {
    mode: report.mode,
    checks: report.checks,
    commands: report.commands.map((c) => {
      if (c.stdin === undefined) return { argv: c.argv };
      stdins.push(c.stdin);
      return { argv: c.argv, stdin: `${tag}${stdins.length - 1}` };
    }),
  };
  body.services = report.services;
  if (report.ipvs) body.ipvs = report.ipvs;
  body.notes = report.notes;
  if (report.events?.length) body.events = report.events;
  const text = `${JSON.stringify(body, null, 2)}\n`;
  const quotedTag = JSON.stringify(tag).slice(0, -1); // the opening quote and the escaped tag
  const parts: string[] = [];
  let from = 0;
  for (let i = 0; i < stdins.length; i++) {
    const placeholder = `${quotedTag}${i}"`;
    const at = text.indexOf(placeholder, from);
    parts.push(text.slice(from, at), ...jsonStringParts(stdins[i]!));
    from = at + placeholder.length;
  }
  parts.push(text.slice(from));
  return parts;
}

/**
 * JSON.stringify(text) in pieces of about a megabyte, cut after a newline (never inside a
 * character): escaping a 30 MB string in one piece is markedly slower than in slices.
 */
function jsonStringParts(text: string): string[] {
  const out = ['"'];
  const size = 1 << 20;
  for (let from = 0; from < text.length; ) {
    const cut = text.indexOf("\n", from + size);
    const to = cut === -1 ? text.length : cut + 1;
    out.push(JSON.stringify(text.slice(from, to)).slice(1, -1));
    from = to;
  }
  out.push('"');
  return out;
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

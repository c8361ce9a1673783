// Rendering of configuration problems for people: one line per issue, naming the field, the
// offending value and where it came from (flag or file:line).

import type { ConfigIssue } from "./types.ts";

function showValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value) ?? String(value);
}

function where(issue: ConfigIssue): string {
  if (issue.file === undefined) return "";
  return issue.line === undefined ? issue.file : `${issue.file}:${issue.line}`;
}

/** One line for one issue, e.g. `iptables.masqueradeBit: 40: must be within [0, 31] (flag --iptables-masquerade-bit)`. */
export function formatIssue(issue: ConfigIssue): string {
  const origin = issue.flag !== undefined ? `flag ${issue.flag}` : where(issue);
  const subject = issue.path || issue.flag || where(issue) || "command line";
  const value = issue.value === undefined ? "" : ` ${showValue(issue.value)}:`;
  const source = origin !== "" && origin !== subject && `flag ${subject}` !== origin ? ` (${origin})` : "";
  return `${subject}:${value} ${issue.message}${source}`;
}

/** Every issue, one per line, in the order they were found. */
export function formatIssues(issues: readonly ConfigIssue[]): string {
  return issues.map(formatIssue).join("\n");
}

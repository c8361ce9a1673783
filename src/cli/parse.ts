// argv parsing with Kubernetes (spf13/pflag) syntax: --flag=value, --flag value, a bare
// --bool-flag that never takes the next argument, -v=4 / -v 4 / -v4, and "--" to end flags.
// It never stops at the first problem: every bad flag is reported.

import type { ConfigIssue } from "../config/types.ts";
import { FLAGS, findFlag, findShorthand } from "./flags.ts";
import type { FlagSpec, FlagValue } from "./types.ts";
import { combineFlagValues, parseFlagValue } from "./values.ts";

export interface ParsedArgs {
  /** Explicitly given flags by canonical name, repeated uses already folded together. */
  values: Map<string, FlagValue>;
  /** How each explicit flag was spelled on the command line the first time ("--mode", "-v"). */
  spelled: Map<string, string>;
  /** Canonical names of explicit flags in first-seen order. */
  order: string[];
  positional: string[];
  issues: ConfigIssue[];
  notices: string[];
}

/** The config path an issue about `spec` should carry ("" for flags that set no field). */
export function issuePath(spec: FlagSpec): string {
  return spec.config === "runOption" ? "" : spec.config;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] ?? 0;
      row[j] = Math.min(above + 1, (row[j - 1] ?? 0) + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] ?? 0;
}

function suggestion(name: string): string {
  let best: string | undefined;
  let bestDistance = 3;
  for (const spec of FLAGS) {
    for (const candidate of [spec.name, ...spec.aliases]) {
      const distance = editDistance(name, candidate);
      if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
    }
  }
  return best === undefined ? "" : ` (did you mean --${best}?)`;
}

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const out: ParsedArgs = {
    values: new Map(),
    spelled: new Map(),
    order: [],
    positional: [],
    issues: [],
    notices: [],
  };

  const record = (spec: FlagSpec, spelledAs: string, text: string | undefined): void => {
    if (text === undefined) {
      out.issues.push({ path: issuePath(spec), flag: spelledAs, value: undefined, message: "needs a value" });
      return;
    }
    const parsed = parseFlagValue(spec, text);
    if (!parsed.ok) {
      out.issues.push({ path: issuePath(spec), flag: spelledAs, value: text, message: parsed.error });
      return;
    }
    if (!out.values.has(spec.name)) {
      out.order.push(spec.name);
      out.spelled.set(spec.name, spelledAs);
      if (spec.deprecated) out.notices.push(`flag ${spelledAs} is deprecated: ${spec.deprecated}`);
    }
    out.values.set(spec.name, combineFlagValues(spec, out.values.get(spec.name), parsed.value));
  };

  /** A flag that can stand alone: bools, and flags with a no-option default such as --version. */
  const standalone = (spec: FlagSpec): string | undefined =>
    spec.kind === "bool" ? (spec.noOptValue ?? "true") : spec.noOptValue;

  let i = 0;
  const next = (): string | undefined => (i < argv.length ? argv[i++] : undefined);

  while (i < argv.length) {
    const arg = argv[i++] ?? "";
    if (arg === "--") {
      out.positional.push(...argv.slice(i));
      break;
    }
    if (arg.startsWith("--")) {
      const body = arg.slice(2);
      const eq = body.indexOf("=");
      const name = eq < 0 ? body : body.slice(0, eq);
      const inline = eq < 0 ? undefined : body.slice(eq + 1);
      const spec = findFlag(name);
      if (!spec) {
        out.issues.push({
          path: "",
          flag: `--${name}`,
          value: inline,
          message: `unknown flag${suggestion(name)}`,
        });
        // Skip what is most likely its value, so it is not also reported as a stray argument.
        if (inline === undefined && i < argv.length && !(argv[i] ?? "").startsWith("-")) i++;
        continue;
      }
      const spelledAs = `--${name.replaceAll("_", "-")}`;
      record(spec, spelledAs, inline ?? standalone(spec) ?? next());
      continue;
    }
    if (arg.startsWith("-") && arg.length > 1) {
      // One or more shorthand letters, the last of which may carry a value ("-v4", "-v=4").
      let rest = arg.slice(1);
      while (rest !== "") {
        const letter = rest[0] ?? "";
        rest = rest.slice(1);
        const spec = findShorthand(letter);
        if (!spec) {
          out.issues.push({
            path: "",
            flag: `-${letter}`,
            value: arg,
            message: `unknown shorthand flag in ${arg}`,
          });
          break;
        }
        let text: string | undefined;
        if (rest.startsWith("=")) {
          text = rest.slice(1);
          rest = "";
        } else if (standalone(spec) !== undefined) {
          text = standalone(spec);
        } else if (rest !== "") {
          text = rest;
          rest = "";
        } else {
          text = next();
        }
        record(spec, `-${letter}`, text);
      }
      continue;
    }
    if (arg !== "") out.positional.push(arg);
  }
  return out;
}

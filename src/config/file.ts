// Reads a KubeProxyConfiguration file (YAML or JSON; JSON is read by the YAML parser so both
// get line numbers). Decoding is best-effort: a field that fails is reported and left out, and
// the rest is still returned so that validation can report its problems in the same run.

import { LineCounter, parseDocument } from "yaml";
import type { z } from "zod";
import { deletePath, formatPath, getPath, type PathSegment, pathSegments } from "./paths.ts";
import { API_VERSION, type ConfigLayer, configFileSchema, KIND } from "./schema.ts";
import type { ConfigIssue } from "./types.ts";

export interface ParsedConfigFile {
  /** Everything that decoded; fields with problems are absent. */
  layer: ConfigLayer;
  issues: ConfigIssue[];
  /**
   * Fields the schema does not know. Upstream falls back to lenient decoding and only logs
   * them, so a file that runs upstream runs here too; they are reported as warnings.
   */
  unknownFields: ConfigIssue[];
  /** 1-based line of the value at `path`, when the file has it. */
  lineOf(path: string): number | undefined;
}

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "a boolean (true or false)",
  object: "a mapping of fields",
  record: "a mapping of fields",
  array: "a list",
};

/** Our wording for zod's generic messages; schema-level messages take precedence over this. */
const errorMap: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case "invalid_type":
      return `must be ${TYPE_NAMES[issue.expected] ?? issue.expected}`;
    case "too_big":
      return issue.maximum === 2147483647
        ? "must fit in a signed 32-bit integer"
        : `must be at most ${issue.maximum}`;
    case "too_small":
      return issue.minimum === 0 ? "must not be negative" : `must be at least ${issue.minimum}`;
    default:
      return undefined;
  }
};

const MAX_DECODE_PASSES = 20;

/** Parses `text` (the contents of `fileName`) into a layer plus every problem found. */
export function parseConfigFile(fileName: string, text: string): ParsedConfigFile {
  const lineCounter = new LineCounter();
  // YAML 1.1, like the go-yaml v2 decoder upstream uses: yes/no/on/off are booleans there too.
  const doc = parseDocument(text, { lineCounter, version: "1.1", uniqueKeys: true });
  const lineOf = (path: string): number | undefined => {
    const node = doc.getIn(pathSegments(path), true) as { range?: [number, number, number] } | undefined;
    return node?.range ? lineCounter.linePos(node.range[0]).line : undefined;
  };
  const at = (path: string, value: unknown, message: string): ConfigIssue => {
    const line = lineOf(path);
    return line === undefined
      ? { path, value, message, file: fileName }
      : { path, value, message, file: fileName, line };
  };
  const empty = (issues: ConfigIssue[]): ParsedConfigFile => ({
    layer: {},
    issues,
    unknownFields: [],
    lineOf: () => undefined,
  });

  if (doc.errors.length > 0) {
    return empty(
      doc.errors.map((err) => {
        const issue: ConfigIssue = {
          path: "",
          value: undefined,
          message: `YAML syntax error: ${err.message.split("\n")[0]}`,
          file: fileName,
        };
        const line = err.linePos?.[0]?.line;
        return line === undefined ? issue : { ...issue, line };
      }),
    );
  }

  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    return empty([
      { path: "", value: undefined, message: `cannot decode YAML: ${String(err)}`, file: fileName },
    ]);
  }
  if (raw === null || raw === undefined) {
    return empty([
      { path: "", value: undefined, message: `file is empty; expected a ${KIND} document`, file: fileName },
    ]);
  }
  if (typeof raw !== "object" || Array.isArray(raw)) {
    return empty([
      { path: "", value: raw, message: `expected a ${KIND} mapping at the top level`, file: fileName },
    ]);
  }

  const issues: ConfigIssue[] = [];
  const unknownFields: ConfigIssue[] = [];
  for (const [field, expected] of [
    ["apiVersion", API_VERSION],
    ["kind", KIND],
  ] as const) {
    const value = getPath(raw, field);
    if (value !== expected) {
      const message =
        value === undefined
          ? `required; must be ${JSON.stringify(expected)}`
          : `must be ${JSON.stringify(expected)}`;
      issues.push(at(field, value, message));
    }
  }

  // Decode; drop whatever fails and decode again, so one bad field never hides the others.
  const work: unknown = structuredClone(raw);
  let layer: ConfigLayer = {};
  for (let pass = 0; pass < MAX_DECODE_PASSES; pass++) {
    const result = configFileSchema.safeParse(work, { error: errorMap });
    if (result.success) {
      const { apiVersion: _apiVersion, kind: _kind, ...rest } = result.data;
      layer = rest;
      break;
    }
    const doomed: PathSegment[][] = [];
    for (const zi of result.error.issues) {
      const base = zi.path.filter((seg): seg is PathSegment => typeof seg !== "symbol");
      if (zi.code === "unrecognized_keys") {
        for (const key of zi.keys) {
          const path = formatPath([...base, key]);
          unknownFields.push(at(path, getPath(raw, [...base, key]), "unknown field, ignored"));
          doomed.push([...base, key]);
        }
      } else {
        issues.push(at(formatPath(base), getPath(raw, base), zi.message));
        doomed.push(base);
      }
    }
    // Reverse order keeps earlier list indexes valid while later elements are removed.
    for (const path of doomed.reverse()) {
      if (path.length === 0) return empty(issues);
      deletePath(work, path);
    }
  }

  return {
    layer,
    issues,
    unknownFields,
    lineOf,
  };
}

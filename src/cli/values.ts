// Text-to-value conversion for each flag kind, with the syntax Go's flag values accept
// (strconv.ParseBool, ParseInt with base prefixes, time.ParseDuration, pflag's comma lists).

import { parseGoDuration } from "../config/duration.ts";
import type { FlagSpec, FlagValue } from "./types.ts";

export type ValueParse = { ok: true; value: FlagValue } | { ok: false; error: string };

const INT32: readonly [number, number] = [-2147483648, 2147483647];

const TRUE_WORDS = new Set(["1", "t", "T", "true", "TRUE", "True"]);
const FALSE_WORDS = new Set(["0", "f", "F", "false", "FALSE", "False"]);

export function parseBool(text: string): boolean | undefined {
  if (TRUE_WORDS.has(text)) return true;
  if (FALSE_WORDS.has(text)) return false;
  return undefined;
}

const DIGIT: Readonly<Record<number, string>> = { 2: "[01]", 8: "[0-7]", 10: "[0-9]", 16: "[0-9a-fA-F]" };

/** Go's strconv.ParseInt(text, 0, 64): optional sign, 0x/0o/0b/leading-0 prefixes, "_" separators. */
export function parseGoInt(text: string): number | undefined {
  const negative = text.startsWith("-");
  const body = text.startsWith("-") || text.startsWith("+") ? text.slice(1) : text;
  let base = 10;
  let digits = body;
  if (/^0[xX]/.test(body)) [base, digits] = [16, body.slice(2)];
  else if (/^0[oO]/.test(body)) [base, digits] = [8, body.slice(2)];
  else if (/^0[bB]/.test(body)) [base, digits] = [2, body.slice(2)];
  else if (body.length > 1 && body.startsWith("0")) [base, digits] = [8, body.slice(1)];
  const digit = DIGIT[base];
  // Underscores only between digits, or right after a base prefix.
  const shape = new RegExp(`^${digits === body ? "" : "_?"}${digit}+(_${digit}+)*$`);
  if (!shape.test(digits)) return undefined;
  const value = Number.parseInt(digits.replaceAll("_", ""), base);
  return negative ? -value : value;
}

/** Decimal floats as strconv.ParseFloat reads them; infinities and NaN are refused. */
export function parseFloatText(text: string): number | undefined {
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/** pflag's comma-separated list: surrounding spaces trimmed, empty items dropped. */
export function parseList(text: string): string[] {
  return text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** "key=value,key2=value2" where each value is a bool (feature gates) or a level (vmodule). */
function parseMap(text: string, valueKind: "bool" | "uint"): ValueParse {
  const out: Record<string, boolean | number> = {};
  for (const raw of text.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    const eq = item.indexOf("=");
    if (eq < 0) return { ok: false, error: `${JSON.stringify(item)} must have the form key=value` };
    const key = item.slice(0, eq).trim();
    const valueText = item.slice(eq + 1).trim();
    if (key === "") return { ok: false, error: `${JSON.stringify(item)} has an empty key` };
    if (valueKind === "bool") {
      const value = parseBool(valueText);
      if (value === undefined)
        return { ok: false, error: `${JSON.stringify(item)}: value must be true or false` };
      out[key] = value;
    } else {
      if (!/^\d+$/.test(valueText))
        return { ok: false, error: `${JSON.stringify(item)}: level must be a number` };
      out[key] = Number(valueText);
    }
  }
  return { ok: true, value: out as FlagValue };
}

/** Parses one occurrence of a flag's text. */
export function parseFlagValue(spec: FlagSpec, text: string): ValueParse {
  switch (spec.kind) {
    case "bool": {
      const value = parseBool(text);
      return value === undefined ? { ok: false, error: "must be true or false" } : { ok: true, value };
    }
    case "string":
      if (spec.choices && !spec.choices.includes(text)) {
        return { ok: false, error: `must be one of ${spec.choices.join(", ")}` };
      }
      return { ok: true, value: text };
    case "int": {
      const value = parseGoInt(text);
      const [min, max] = spec.intRange ?? INT32;
      if (value === undefined) return { ok: false, error: "must be an integer" };
      if (value < min || value > max) return { ok: false, error: `must be within [${min}, ${max}]` };
      return { ok: true, value };
    }
    case "float": {
      const value = parseFloatText(text);
      return value === undefined ? { ok: false, error: "must be a number" } : { ok: true, value };
    }
    case "duration": {
      const parsed = parseGoDuration(text);
      return parsed.ok ? { ok: true, value: parsed.ms } : { ok: false, error: parsed.error };
    }
    case "stringSlice":
    case "cidrList":
      return { ok: true, value: parseList(text) };
    case "stringArray":
      // pflag's StringArray: each use is one value, commas and all.
      return { ok: true, value: [text] };
    case "map":
      return parseMap(text, spec.mapValue ?? "bool");
  }
}

/**
 * Folds a repeated flag the way pflag does: lists append and maps merge (the first use replaces
 * the default, later uses add to it); every other kind keeps the last value.
 */
export function combineFlagValues(
  spec: FlagSpec,
  previous: FlagValue | undefined,
  next: FlagValue,
): FlagValue {
  if (previous === undefined) return next;
  if (
    (spec.kind === "stringSlice" || spec.kind === "stringArray" || spec.kind === "cidrList") &&
    Array.isArray(previous) &&
    Array.isArray(next)
  ) {
    return [...previous, ...next];
  }
  if (spec.kind === "map" && typeof previous === "object" && typeof next === "object") {
    return { ...previous, ...next } as FlagValue;
  }
  return next;
}

// Every flag's value as pflag's Value.String() prints it (what /flagz shows): the value given on
// the command line, else the flag's default. Lists print as "[a,b]", maps as sorted "k=v" pairs,
// durations in Go's form.

import { formatGoDuration } from "../config/duration.ts";
import { FLAGS } from "./flags.ts";
import type { FlagSpec, FlagValue } from "./types.ts";

function valueString(spec: FlagSpec, value: FlagValue): string {
  switch (spec.kind) {
    case "duration":
      return formatGoDuration(value as number);
    case "stringSlice":
    case "stringArray":
    case "cidrList":
      return `[${(value as readonly string[]).join(",")}]`;
    case "map":
      return Object.entries(value as Readonly<Record<string, boolean | number>>)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => `${k}=${v}`)
        .join(",");
    default:
      return String(value);
  }
}

/** Canonical flag name -> its value's text, for every flag of the binary. */
export function flagValueStrings(given: ReadonlyMap<string, FlagValue>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const spec of FLAGS) out[spec.name] = valueString(spec, given.get(spec.name) ?? spec.default);
  return out;
}

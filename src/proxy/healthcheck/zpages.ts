// /statusz and /flagz as upstream v1.37 serves them on the metrics port (component-base z-pages,
// beta and on by default since 1.36): a text page for people, whose field delimiter changes at
// random so nobody parses it, and structured config.k8s.io Statusz/Flagz objects (v1beta1, or
// the deprecated v1alpha1) in JSON or YAML for whoever asks with the full media type.

import { stringify } from "yaml";

export interface ZpageResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

const WARNING =
  "Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.";
const DELIMITERS = [":", ": ", "=", " "] as const;
const GROUP = "config.k8s.io";
const VERSIONS = ["v1beta1", "v1alpha1"] as const;
type Version = (typeof VERSIONS)[number];
const TEXT = "text/plain; charset=utf-8";
const ACCEPTED = "application/json, application/yaml, text/plain";

/** One Accept clause: the media type and its parameters. */
interface MediaRange {
  readonly type: string;
  readonly params: Readonly<Record<string, string>>;
  readonly q: number;
}

function parseAccept(header: string): MediaRange[] {
  const out: MediaRange[] = [];
  for (const clause of header.split(",")) {
    const [range = "", ...rest] = clause.split(";").map((p) => p.trim());
    if (range === "") continue;
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of rest) {
      const eq = p.indexOf("=");
      if (eq < 0) continue;
      const key = p.slice(0, eq).trim().toLowerCase();
      const value = p.slice(eq + 1).trim();
      if (key === "q") q = Number(value);
      else params[key] = value;
    }
    if (!(q > 0)) continue;
    out.push({ type: range.toLowerCase(), params, q });
  }
  // Higher q first; among equals, the more specific range first (as goautoneg orders them).
  const specificity = (r: MediaRange) => (r.type === "*/*" ? 0 : r.type.endsWith("/*") ? 1 : 2);
  return out
    .map((r, i) => ({ r, i }))
    .sort((a, b) => b.r.q - a.r.q || specificity(b.r) - specificity(a.r) || a.i - b.i)
    .map((x) => x.r);
}

function matches(range: string, type: string): boolean {
  if (range === "*/*" || range === type) return true;
  return range.endsWith("/*") && type.startsWith(range.slice(0, -1));
}

type Choice = { readonly kind: "text" } | { readonly kind: "json" | "yaml"; readonly version: Version };

/** What the Accept header asks for; undefined: nothing this page can produce (406). */
export function negotiate(accept: string | undefined, kind: "Statusz" | "Flagz"): Choice | undefined {
  if (accept === undefined || accept.trim() === "") return { kind: "text" };
  for (const range of parseAccept(accept)) {
    for (const type of ["application/json", "application/yaml", "text/plain"] as const) {
      if (!matches(range.type, type)) continue;
      const { as, g, v } = range.params;
      const gvk = as !== undefined || g !== undefined || v !== undefined;
      if (type === "text/plain") {
        if (!gvk) return { kind: "text" };
        continue;
      }
      const version = VERSIONS.find((x) => x === v);
      if (as === kind && g === GROUP && version)
        return { kind: type === "application/json" ? "json" : "yaml", version };
    }
  }
  return undefined;
}

function notAcceptable(): ZpageResponse {
  const status = {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: `only the following media types are accepted: ${ACCEPTED}`,
    reason: "NotAcceptable",
    code: 406,
  };
  return {
    status: 406,
    headers: { "Content-Type": "application/json" },
    body: `${JSON.stringify(status, null, 2)}\n`,
  };
}

function structured(
  choice: Extract<Choice, { version: Version }>,
  kind: string,
  fields: object,
): ZpageResponse {
  const obj = { kind, apiVersion: `${GROUP}/${choice.version}`, metadata: { name: "kube-proxy" }, ...fields };
  const media = choice.kind === "json" ? "application/json" : "application/yaml";
  const headers: Record<string, string> = {
    "Content-Type": `${media};g=${GROUP};v=${choice.version};as=${kind}`,
  };
  if (choice.version === "v1alpha1")
    headers.Warning = `299 - "This version of the ${kind.toLowerCase()} endpoint is deprecated. Please use a newer version."`;
  const body = choice.kind === "json" ? `${JSON.stringify(obj)}\n` : stringify(obj);
  return { status: 200, headers, body };
}

const htmlEscape = (s: string) =>
  s.replace(
    /[&<>'"]/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&#39;", '"': "&#34;" })[c] ?? c,
  );

const pad2 = (n: number) => String(n).padStart(2, "0");

/** Go's time.UnixDate layout, in UTC: "Thu Jul 23 14:47:51 UTC 2026" (day space-padded). */
export function unixDate(ms: number): string {
  const d = new Date(ms);
  const day = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][d.getUTCDay()];
  const month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][
    d.getUTCMonth()
  ];
  const time = `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`;
  return `${day} ${month} ${String(d.getUTCDate()).padStart(2, " ")} ${time} UTC ${d.getUTCFullYear()}`;
}

/** "<h> hr <mm> min <ss> sec". */
export function uptimeText(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  return `${Math.floor(s / 3600)} hr ${pad2(Math.floor((s % 3600) / 60))} min ${pad2(s % 60)} sec`;
}

/** The served paths as statusz lists them: first segments, without duplicates, sorted bytewise. */
export function listedPaths(paths: readonly string[]): string[] {
  const firsts = paths.map((p) => `/${p.split("/")[1] ?? ""}`);
  return [...new Set(firsts)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

export interface StatuszInput {
  /** Process start, epoch ms (second precision is shown). */
  readonly startTimeMs: number;
  readonly nowMs: number;
  /** Where "Go version" stands upstream: the runtime this binary runs on. */
  readonly runtime: string;
  readonly binaryVersion: string;
  /** The upstream minor this build behaves as ("1.37"). */
  readonly emulationVersion: string;
  readonly paths: readonly string[];
}

export function statuszResponse(
  accept: string | undefined,
  s: StatuszInput,
  random: () => number = Math.random,
): ZpageResponse {
  const choice = negotiate(accept, "Statusz");
  if (!choice) return notAcceptable();
  const startMs = Math.floor(s.startTimeMs / 1000) * 1000;
  const uptime = Math.max(0, Math.floor((s.nowMs - startMs) / 1000));
  const paths = listedPaths(s.paths);
  if (choice.kind !== "text") {
    return structured(choice, "Statusz", {
      startTime: new Date(startMs).toISOString().replace(".000Z", "Z"),
      uptimeSeconds: uptime,
      goVersion: s.runtime,
      binaryVersion: s.binaryVersion,
      ...(s.emulationVersion ? { emulationVersion: s.emulationVersion } : {}),
      paths,
    });
  }
  const d = DELIMITERS[Math.floor(random() * DELIMITERS.length)] ?? ":";
  const line = (name: string, value: string) => `${name}${d} ${htmlEscape(value)}`;
  const body = [
    "",
    "kube-proxy statusz",
    WARNING,
    "",
    line("Started", unixDate(startMs)),
    line("Up", uptimeText(uptime)),
    line("Go version", s.runtime),
    line("Binary version", s.binaryVersion),
    s.emulationVersion ? line("Emulation version", s.emulationVersion) : "",
    paths.length ? line("Paths", paths.join(" ")) : "",
  ].join("\n");
  return { status: 200, headers: { "Content-Type": TEXT }, body: `${body}\n` };
}

/** /flagz: the command line's flags (given or default), as the process started. */
export class Flagz {
  private text: string | undefined;

  constructor(
    private readonly flags: Readonly<Record<string, string>>,
    private readonly random: () => number = Math.random,
  ) {}

  response(accept: string | undefined): ZpageResponse {
    const choice = negotiate(accept, "Flagz");
    if (!choice) return notAcceptable();
    const names = Object.keys(this.flags).sort();
    if (choice.kind !== "text") {
      const flags = Object.fromEntries(names.map((n) => [n, this.flags[n] ?? ""]));
      return structured(choice, "Flagz", names.length ? { flags } : {});
    }
    // The first text render is kept: the delimiter stays the same for the life of the process.
    if (this.text === undefined) {
      const d = DELIMITERS[Math.floor(this.random() * DELIMITERS.length)] ?? ":";
      const lines = names.map((n) => `${n}${d}${htmlEscape(this.flags[n] ?? "")}\n`);
      this.text = `\nkube-proxy flagz\n${WARNING}\n${lines.join("")}`;
    }
    return { status: 200, headers: { "Content-Type": TEXT }, body: this.text };
  }
}

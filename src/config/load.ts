// Builds the effective configuration: built-in defaults < --config file < explicit flags.
// Upstream ignores most flags once --config is given (a well-known trap); here an explicit flag
// always wins, and each flag that replaces a file value is returned as an Override to be logged.

import { joinHostPort, splitHostPort } from "../util/net/host-port.ts";
import { DEFAULT_CONTENT_TYPE, dropZeroDefaults, resolveConfig } from "./defaults.ts";
import { formatGoDuration } from "./duration.ts";
import { type ParsedConfigFile, parseConfigFile } from "./file.ts";
import { formatIssue } from "./issues.ts";
import { deepEqual, formatPath, getPath, mergeDeep, pathSegments, setPath } from "./paths.ts";
import { type ConfigLayer, DURATION_PATHS } from "./schema.ts";
import type { ConfigIssue, IssueOrigin, Override, PlainValue, ProxyConfig } from "./types.ts";
import { validateConfig } from "./validate.ts";

/** One explicitly given flag, already parsed into the file's representation (durations in ms). */
export interface FlagSetting {
  flag: string;
  path: string;
  value: unknown;
}

/** A deprecated --healthz-port / --metrics-port: replaces only the port of an address. */
export interface PortSetting {
  flag: string;
  path: "healthzBindAddress" | "metricsBindAddress";
  port: number;
}

export interface LoadInput {
  /** The --config file, already read. */
  file?: { name: string; text: string };
  settings: readonly FlagSetting[];
  ports?: readonly PortSetting[];
}

export interface LoadResult {
  /** Present only when there are no issues. */
  config?: ProxyConfig;
  issues: ConfigIssue[];
  overrides: Override[];
  notices: string[];
  /** Problems that do not stop a run (unknown config fields), one line each. */
  warnings: string[];
}

/**
 * How a value reads to a person: durations as Go strings, everything else as is. Layer values
 * come from YAML/JSON or from flag parsing, so they are plain data by construction.
 */
export function displayValue(path: string, value: unknown): PlainValue {
  if (DURATION_PATHS.has(path) && typeof value === "number") return formatGoDuration(value);
  return value as PlainValue;
}

function layerFromSettings(settings: readonly FlagSetting[]): ConfigLayer {
  const layer: Record<string, unknown> = {};
  for (const s of settings) setPath(layer, s.path, s.value);
  return layer as ConfigLayer;
}

/** The longest recorded path that `path` lies under ("ipvs.excludeCIDRs[1]" -> "ipvs.excludeCIDRs"). */
function owningPath(path: string, known: ReadonlyMap<string, string>): string | undefined {
  const segs = pathSegments(path);
  for (let n = segs.length; n > 0; n--) {
    const prefix = formatPath(segs.slice(0, n));
    if (known.has(prefix)) return prefix;
  }
  return undefined;
}

function findOverrides(fileLayer: ConfigLayer, settings: readonly FlagSetting[]): Override[] {
  const out: Override[] = [];
  for (const s of settings) {
    const fileValue = getPath(fileLayer, s.path);
    if (fileValue === undefined) continue;
    // A feature-gate flag merges key by key; compare what the file's keys end up as.
    const flagValue =
      s.path === "featureGates" && typeof s.value === "object"
        ? { ...(fileValue as object), ...(s.value as object) }
        : s.value;
    if (deepEqual(fileValue, flagValue)) continue;
    out.push({
      flag: s.flag,
      path: s.path,
      fileValue: displayValue(s.path, fileValue),
      flagValue: displayValue(s.path, s.value),
    });
  }
  return out;
}

/** Applies a deprecated port flag the way upstream's addressFromDeprecatedFlags does. */
function applyPort(
  config: ProxyConfig,
  port: PortSetting,
  /** The address flag given alongside, when it already names a port (upstream keeps that port). */
  addressFlagWithPort: string | undefined,
  notices: string[],
): void {
  if (port.port === 0) {
    config[port.path] = "";
    return;
  }
  if (addressFlagWithPort !== undefined) {
    notices.push(`${port.flag} is ignored because ${addressFlagWithPort} already names a port`);
    return;
  }
  const current = config[port.path];
  const split = splitHostPort(current);
  const host = split.ok ? split.host : current;
  config[port.path] = joinHostPort(host, port.port);
}

export function loadConfig(input: LoadInput): LoadResult {
  const issues: ConfigIssue[] = [];
  const notices: string[] = [];
  const warnings: string[] = [];
  let parsed: ParsedConfigFile | undefined;
  let fileLayer: ConfigLayer = {};
  if (input.file) {
    parsed = parseConfigFile(input.file.name, input.file.text);
    issues.push(...parsed.issues);
    warnings.push(...parsed.unknownFields.map((i) => formatIssue(i)));
    fileLayer = dropZeroDefaults(parsed.layer);
  }

  const flagLayer = layerFromSettings(input.settings);
  const flagOf = new Map(input.settings.map((s) => [s.path, s.flag]));
  const overrides = findOverrides(fileLayer, input.settings);
  const merged = mergeDeep(
    fileLayer as Record<string, unknown>,
    flagLayer as Record<string, unknown>,
  ) as ConfigLayer;

  const config = resolveConfig(merged);
  for (const port of input.ports ?? []) {
    const addressFlag = flagOf.get(port.path);
    const withPort = splitHostPort(String(getPath(flagLayer, port.path) ?? "")).ok ? addressFlag : undefined;
    const before = config[port.path];
    applyPort(config, port, withPort, notices);
    flagOf.set(port.path, flagOf.get(port.path) ?? port.flag);
    const fromFile = getPath(fileLayer, port.path);
    if (fromFile !== undefined && before !== config[port.path]) {
      overrides.push({
        flag: port.flag,
        path: port.path,
        fileValue: displayValue(port.path, fromFile),
        flagValue: config[port.path],
      });
    }
  }

  const originOf = (path: string): IssueOrigin => {
    const flagPath = owningPath(path, flagOf);
    // --feature-gates merges into the file's map key by key: it owns only the keys it set.
    const flagOwns =
      flagPath !== "featureGates" || path === flagPath || getPath(flagLayer, path) !== undefined;
    if (flagPath !== undefined && flagOwns) return { flag: flagOf.get(flagPath) };
    const listPath = path.replace(/\[\d+\]$/, "");
    if (input.file && parsed && getPath(fileLayer, listPath) !== undefined) {
      const line = parsed.lineOf(path);
      return line === undefined ? { file: input.file.name } : { file: input.file.name, line };
    }
    return {};
  };

  const rawHostname = merged.hostnameOverride;
  if (rawHostname !== undefined && rawHostname !== "" && rawHostname.trim() === "") {
    issues.push({
      path: "hostnameOverride",
      value: rawHostname,
      message: "must not be blank",
      ...originOf("hostnameOverride"),
    });
  }
  issues.push(...validateConfig(config, originOf));

  // Said once per start, default included: upstream's default asks for protobuf.
  const contentType = config.clientConnection.contentType;
  if (contentType.includes("protobuf")) {
    notices.push(
      `clientConnection.contentType ${contentType === DEFAULT_CONTENT_TYPE ? "" : `${contentType} `}` +
        "asks for protobuf, but this build's API client speaks JSON; requests use application/json",
    );
  }

  return issues.length === 0
    ? { config, issues, overrides, notices, warnings }
    : { issues, overrides, notices, warnings };
}

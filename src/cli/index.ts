// Entry API for main: argv (without the program name) in, one decision out: show help, show
// the version, report every problem, or run with a validated config and run options.

import { type FlagSetting, loadConfig, type PortSetting } from "../config/load.ts";
import type { ConfigIssue } from "../config/types.ts";
import { errText } from "../util/err-text.ts";
import { parseExplainSource, parseExplainTarget } from "./explain-target.ts";
import { flagValueStrings } from "./flag-values.ts";
import { FLAGS } from "./flags.ts";
import { renderHelp } from "./help.ts";
import { type ParsedArgs, parseArgs } from "./parse.ts";
import type {
  CommandLine,
  ExplainRequest,
  FlagSpec,
  FlagValue,
  IptablesBackend,
  OutputFormat,
  RunOptions,
} from "./types.ts";

export { defaultProxyConfig } from "../config/defaults.ts";
export { formatIssue, formatIssues } from "../config/issues.ts";
export type { ConfigIssue, Override, ProxyConfig } from "../config/types.ts";
export { lossyFields, serializeConfig } from "../config/write.ts";
export { FLAGS } from "./flags.ts";
export { renderFlagReferenceMarkdown, renderHelp } from "./help.ts";
export type { CommandLine, ExplainRequest, FlagSpec, RunOptions } from "./types.ts";

/** Turns a flag's parsed value into the config file's representation of its field. */
function settingValue(spec: FlagSpec, value: FlagValue): unknown {
  if (spec.config === "logging.vmodule") {
    return Object.entries(value as Record<string, number>).map(([filePattern, verbosity]) => ({
      filePattern,
      verbosity,
    }));
  }
  return Array.isArray(value) ? [...value] : value;
}

function configInputs(parsed: ParsedArgs): { settings: FlagSetting[]; ports: PortSetting[] } {
  const settings: FlagSetting[] = [];
  const ports: PortSetting[] = [];
  for (const spec of FLAGS) {
    const value = parsed.values.get(spec.name);
    if (value === undefined || spec.config === "runOption") continue;
    const flag = parsed.spelled.get(spec.name) ?? `--${spec.name}`;
    if (spec.portOf) ports.push({ flag, path: spec.portOf, port: value as number });
    else settings.push({ flag, path: spec.config, value: settingValue(spec, value) });
  }
  return { settings, ports };
}

function runOptions(parsed: ParsedArgs): RunOptions {
  const str = (name: string): string | undefined => {
    const value = parsed.values.get(name);
    return typeof value === "string" && value !== "" ? value : undefined;
  };
  const bool = (name: string): boolean => parsed.values.get(name) === true;
  const run: RunOptions = {
    dryRun: bool("dry-run"),
    output: (str("output") ?? "text") as OutputFormat,
    cleanup: bool("cleanup"),
    initOnly: bool("init-only"),
    iptablesBackend: (str("iptables-backend") ?? "auto") as IptablesBackend,
    flagValues: flagValueStrings(parsed.values),
  };
  const optional: [keyof RunOptions, string][] = [
    ["configFile", "config"],
    ["writeConfigTo", "write-config-to"],
    ["dumpStateFile", "dump-state"],
    ["master", "master"],
    ["explainFrom", "from"],
  ];
  const states = parsed.values.get("state");
  if (Array.isArray(states) && states.length > 0) run.stateFiles = states as string[];
  for (const [key, name] of optional) {
    const value = str(name);
    if (value !== undefined) Object.assign(run, { [key]: value });
  }
  return run;
}

/** --version accepts true/false, "raw", or a version string that upstream would report instead. */
function versionRequest(
  parsed: ParsedArgs,
  issues: ConfigIssue[],
  notices: string[],
): "raw" | "plain" | undefined {
  const value = parsed.values.get("version");
  if (value === undefined || value === "false" || value === "0" || value === "f" || value === "F")
    return undefined;
  if (value === "raw") return "raw";
  if (["true", "1", "t", "T", "TRUE", "True"].includes(String(value))) return "plain";
  if (/^v\d+\.\d+\.\d+/.test(String(value))) {
    notices.push(
      `--version=${String(value)} (overriding the reported version) is not supported and is ignored`,
    );
    return undefined;
  }
  issues.push({
    path: "",
    flag: "--version",
    value,
    message: "must be true, false, raw or a version such as v1.31.0",
  });
  return undefined;
}

/**
 * Parses `argv` (the arguments after the program name), reads the --config file through
 * `readFile`, merges defaults < file < explicit flags and validates the result.
 */
export function resolveCommandLine(argv: readonly string[], readFile: (path: string) => string): CommandLine {
  const parsed = parseArgs(argv);
  if (parsed.values.get("help") === true) return { kind: "help", text: renderHelp() };

  const issues: ConfigIssue[] = [...parsed.issues];
  const notices: string[] = [...parsed.notices];
  const version = versionRequest(parsed, issues, notices);
  if (version !== undefined && issues.length === 0) return { kind: "version", raw: version === "raw" };

  const run = runOptions(parsed);
  const explain = explainRequest(parsed.positional, run, issues);
  if (run.output === "dot" && !explain)
    issues.push({ path: "", flag: "--output", value: "dot", message: "dot only applies to `explain`" });
  if ((run.stateFiles?.length ?? 0) > 1 && explain) {
    issues.push({
      path: "",
      flag: "--state",
      value: run.stateFiles,
      message: "explain traces one snapshot: give --state once",
    });
  } else if ((run.stateFiles?.length ?? 0) > 1 && !run.dryRun) {
    issues.push({
      path: "",
      flag: "--state",
      value: run.stateFiles,
      message: "more than one snapshot is a replay, which only --dry-run does",
    });
  }
  let file: { name: string; text: string } | undefined;
  if (run.configFile !== undefined) {
    try {
      file = { name: run.configFile, text: readFile(run.configFile) };
    } catch (err) {
      const reason = errText(err);
      issues.push({
        path: "",
        flag: "--config",
        value: run.configFile,
        message: `cannot read the file: ${reason}`,
      });
    }
  }

  const loaded = loadConfig({ ...configInputs(parsed), ...(file ? { file } : {}) });
  issues.push(...loaded.issues);
  if (issues.length > 0 || loaded.config === undefined) return { kind: "error", errors: issues };
  return {
    kind: "run",
    config: loaded.config,
    run,
    overrides: loaded.overrides,
    notices: [...notices, ...loaded.notices],
    warnings: loaded.warnings,
    explicitFlags: [...parsed.order],
    ...(explain ? { explain } : {}),
  };
}

/**
 * `explain TARGET` as the positional words (the only ones kube-proxy-ts takes), with --from;
 * anything else positional, or --from without explain, is an issue.
 */
function explainRequest(
  positional: readonly string[],
  run: RunOptions,
  issues: ConfigIssue[],
): ExplainRequest | undefined {
  if (positional[0] !== "explain") {
    if (positional.length > 0) {
      issues.push({
        path: "",
        value: positional,
        message:
          "kube-proxy takes no positional arguments but `explain IP:port[/proto]` (flags need a leading --)",
      });
    }
    if (run.explainFrom !== undefined)
      issues.push({ path: "", flag: "--from", value: run.explainFrom, message: "only applies to `explain`" });
    return undefined;
  }
  if (positional.length !== 2) {
    issues.push({
      path: "",
      value: positional.slice(1),
      message: "explain takes one target, IP:port[/tcp|udp|sctp] (e.g. explain 192.0.2.10:80/tcp)",
    });
    return undefined;
  }
  const target = parseExplainTarget(positional[1]!);
  if (!target.ok) {
    issues.push({ path: "", value: positional[1], message: `explain target ${target.error}` });
    return undefined;
  }
  if (run.explainFrom === undefined) return target.value;
  const source = parseExplainSource(run.explainFrom);
  if (!source.ok) {
    issues.push({ path: "", flag: "--from", value: run.explainFrom, message: source.error });
    return undefined;
  }
  if (source.value.includes(":") !== target.value.destination.includes(":")) {
    issues.push({
      path: "",
      flag: "--from",
      value: run.explainFrom,
      message: `is not of the target's IP family (${target.value.destination})`,
    });
    return undefined;
  }
  return { ...target.value, source: source.value };
}

// The program: flags -> config -> host -> mode -> sysctls -> (proxier and sources arrive with
// their issues). Returns the exit code; nothing touches the host before config is valid.

import { readFileSync } from "node:fs";
import { formatIssues, resolveCommandLine } from "../cli/index.ts";
import { featureGateWarnings } from "../config/feature-gates.ts";
import type { ProxyConfig } from "../config/types.ts";
import { serializeConfig } from "../config/write.ts";
import { renderCommand } from "../dryrun/report.ts";
import { createLogger, type Logger, parseVmodule } from "../log/logger.ts";
import { errText } from "../util/err-text.ts";
import { formatVersion, versionInfo } from "../version.ts";
import { cleanupNode } from "./cleanup.ts";
import { type ConfigWatch, watchConfigFile } from "./config-watch.ts";
import { dryRun } from "./dry-run.ts";
import { explain } from "./explain.ts";
import { createHost, type HostOptions } from "./host.ts";
import { writePrivateFileSync } from "./private-file.ts";
import { realRun } from "./real-run.ts";
import { replay } from "./replay.ts";

export interface Io {
  stdout(text: string): void;
  /**
   * Writes like stdout and resolves once the stream takes more: a big output (a dry run's
   * report) then waits for a slow reader instead of queueing in memory. Optional: stdout serves.
   */
  stdoutPaced?(text: string): Promise<void>;
  stderr(text: string): void;
  readFile(path: string): string;
}

export const processIo: Io = {
  stdout: (t) => process.stdout.write(t),
  stdoutPaced: (t) => (process.stdout.write(t) ? Promise.resolve() : drained(process.stdout)),
  stderr: (t) => process.stderr.write(t),
  readFile: (p) => readFileSync(p, "utf8"),
};

/** Resolves on the stream's next "drain", or once it can never come (closed, failed). */
function drained(stream: NodeJS.WritableStream): Promise<void> {
  return new Promise((done) => {
    const end = () => {
      stream.off("drain", end);
      stream.off("close", end);
      stream.off("error", end);
      done();
    };
    stream.on("drain", end);
    stream.on("close", end);
    stream.on("error", end);
  });
}

function loggerFor(config: ProxyConfig, io: Io): Logger {
  return createLogger({
    format: config.logging.format,
    verbosity: config.logging.verbosity,
    vmodule: parseVmodule(config.logging.vmodule),
    sink: { write: (line) => io.stderr(`${line}\n`) },
  });
}

export async function run(
  argv: readonly string[],
  io: Io = processIo,
  hostOverrides: Partial<HostOptions> = {},
) {
  // The --config text as loaded: a real run exits once the file no longer holds it.
  let configText: string | undefined;
  const cl = resolveCommandLine(argv, (path) => {
    configText = io.readFile(path);
    return configText;
  });
  switch (cl.kind) {
    case "help":
      io.stdout(cl.text);
      return 0;
    case "version":
      io.stdout(`${formatVersion()}\n`);
      return 0;
    case "error":
      io.stderr(`kube-proxy-ts: invalid configuration:\n${formatIssues(cl.errors)}\n`);
      return 1;
  }
  const { config, run: opts } = cl;
  const log = loggerFor(config, io);
  const v = versionInfo();
  log.info("Starting kube-proxy-ts", { version: v.version, gitCommit: v.gitCommit, runtime: v.runtime });
  for (const o of cl.overrides) {
    log.info("Flag overrides config file", {
      flag: o.flag,
      field: o.path,
      fileValue: o.fileValue,
      value: o.flagValue,
    });
  }
  for (const n of cl.notices) log.info(n);
  for (const w of cl.warnings) log.warn(`Config file: ${w}`);
  for (const w of featureGateWarnings(config.featureGates)) log.warn(w);

  if (opts.writeConfigTo) {
    try {
      writePrivateFileSync(opts.writeConfigTo, serializeConfig(config));
    } catch (err) {
      log.error("Could not write the effective configuration", {
        file: opts.writeConfigTo,
        err: errText(err),
      });
      return 1;
    }
    log.info("Wrote effective configuration", { file: opts.writeConfigTo });
    return 0;
  }
  if (cl.explain) return explain(config, opts, cl.explain, log, io, hostOverrides);
  if (opts.cleanup) return cleanup(opts.dryRun, config, log, io, hostOverrides);
  if (opts.dryRun) {
    // More than one snapshot: a replay, step by step on a simulated host.
    if ((opts.stateFiles?.length ?? 0) > 1) return replay(config, opts, log, io);
    return dryRun(config, opts, log, io, hostOverrides);
  }

  const watch =
    opts.configFile !== undefined && configText !== undefined && !opts.initOnly
      ? watchConfigFile({ path: opts.configFile, initial: configText })
      : undefined;
  try {
    return await realRun(
      config,
      opts,
      log,
      hostOverrides,
      watch && exitOnConfigChange(watch, opts.configFile, log),
    );
  } finally {
    watch?.stop();
  }
}

/**
 * Like upstream, a changed configuration file ends the run with an error (exit 1), so the
 * DaemonSet restarts the proxy with the new settings; the rules stay in place meanwhile.
 */
async function exitOnConfigChange(
  watch: ConfigWatch,
  file: string | undefined,
  log: Logger,
): Promise<number> {
  const change = await watch.changed;
  const err =
    change.kind === "changed"
      ? "content of the proxy server's configuration file was updated"
      : "the proxy server's configuration file was removed or cannot be read";
  log.error("Error running ProxyServer; exiting so that a restart applies the new configuration", {
    err,
    file,
    detail: change.detail,
  });
  return 1;
}

/** --cleanup (with --dry-run: print what it would remove instead). */
async function cleanup(
  dryRunOnly: boolean,
  config: ProxyConfig,
  log: Logger,
  io: Io,
  hostOverrides: Partial<HostOptions>,
): Promise<number> {
  const host = createHost({ dryRun: dryRunOnly, ...hostOverrides });
  const code = await cleanupNode(host.exec, log, config.ipvs.excludeCIDRs, config.featureGates);
  if (host.recorder) {
    const lines = host.recorder.commands.map((c) => renderCommand(c));
    io.stdout(`Cleanup would run (${lines.length} commands):\n${lines.join("\n")}\n`);
  }
  return code;
}

// `kube-proxy-ts explain IP:port[/proto] [--from IP]`: where a new connection goes through the
// running mode's rules. With --state the snapshot is synced first on a simulated host (a replay
// of that one snapshot) and the rules are read back from that host; without it, the live node's
// rules are read (read-only: the host is the dry-run recorder, so nothing can be changed).
// Either way the mode's tracer walks the rules as rendered, not the Services they came from.

import { readFile } from "node:fs/promises";
import type { ExplainRequest, RunOptions } from "../cli/types.ts";
import type { ProxyConfig } from "../config/types.ts";
import type { Exec } from "../exec/types.ts";
import { parseStateDocuments } from "../k8s/state-file.ts";
import type { Logger } from "../log/logger.ts";
import type { ExplainPacket } from "../modes/explain.ts";
import { modeForConfig } from "../modes/registry.ts";
import { localAddresses } from "../proxy/local-addresses.ts";
import { errText } from "../util/err-text.ts";
import { renderExplanationDot, renderExplanationJson, renderExplanationText } from "./explain-render.ts";
import { createHost, type HostOptions } from "./host.ts";
import { type Replayed, replaySteps } from "./replay.ts";
import type { Io } from "./run.ts";

/** The source when --from is not given: a client outside the node (benchmarking ranges, RFC 2544/5180). */
const OUTSIDE_CLIENT = { v4: "198.18.0.1", v6: "2001:2::1" };

/** The host the rules are read from: the snapshot synced on a simulated host, or the live node. */
async function rulesHost(
  config: ProxyConfig,
  opts: RunOptions,
  log: Logger,
  hostOverrides: Partial<HostOptions>,
): Promise<{ exec: Exec } | { error: string }> {
  const file = opts.stateFiles?.[0];
  if (file === undefined) return { exec: createHost({ dryRun: true, ...hostOverrides }).exec };
  let replayed: Replayed;
  try {
    const docs = parseStateDocuments(await readFile(file, "utf8"), file);
    replayed = await replaySteps(config, opts, [{ file, docs }], log);
  } catch (err) {
    return { error: `${file}: ${errText(err)}` };
  }
  const { host, reports } = replayed;
  const mode = modeForConfig(config).name;
  const failed = (reports[0]?.checks ?? []).filter((c) => !c.ok && (c.name === "sync" || c.name === mode));
  if (failed.length > 0)
    return { error: `${file}: the snapshot did not sync: ${failed.map((c) => c.detail).join("; ")}` };
  return { exec: host.exec };
}

export async function explain(
  config: ProxyConfig,
  opts: RunOptions,
  request: ExplainRequest,
  log: Logger,
  io: Io,
  hostOverrides: Partial<HostOptions> = {},
): Promise<number> {
  const mode = modeForConfig(config);
  if (!mode.explain) {
    io.stderr(`kube-proxy-ts explain: ${mode.name} mode cannot be traced\n`);
    return 1;
  }
  const host = await rulesHost(config, opts, log, hostOverrides);
  if ("error" in host) {
    io.stderr(`kube-proxy-ts explain: ${host.error}\n`);
    return 1;
  }
  const v6 = request.destination.includes(":");
  const packet: ExplainPacket = {
    source: request.source ?? (v6 ? OUTSIDE_CLIENT.v6 : OUTSIDE_CLIENT.v4),
    destination: request.destination,
    port: request.port,
    protocol: request.protocol,
  };
  try {
    const localIPs = await localAddresses(host.exec, log);
    const explanation = await mode.explain(
      { exec: host.exec, backend: opts.iptablesBackend, log, localIPs },
      packet,
    );
    if (opts.output === "json") io.stdout(renderExplanationJson(explanation));
    else if (opts.output === "dot") io.stdout(renderExplanationDot(explanation));
    else
      io.stdout(
        renderExplanationText(explanation, request.source ? "" : " (a client outside the node; see --from)"),
      );
    return 0;
  } catch (err) {
    io.stderr(`kube-proxy-ts explain: cannot trace the rules: ${errText(err)}\n`);
    return 1;
  }
}

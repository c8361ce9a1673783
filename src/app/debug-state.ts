// What /debug/state answers in a real run: the live state as JSON (src/proxy/debug-state), or
// with ?format=snapshot a --state file of this node's view (the objects trimmed to what
// kube-proxy reads, the EndpointSlices rebuilt from the proxy's own copies, and the host's
// state as --dump-state probes it unless host=false). Built from memory on each request; the
// host probe runs read-only commands and awaits them, so the process keeps syncing meanwhile.

import type { Exec } from "../exec/types.ts";
import { probeHostState } from "../host/host-state/probe.ts";
import type { HostState } from "../host/host-state/schema.ts";
import type { IpsetClient } from "../host/ipset/types.ts";
import type { KernelClient } from "../host/kernel/types.ts";
import { type ObjectStore, renderStateFile } from "../k8s/object-store.ts";
import type { RunningMode } from "../modes/types.ts";
import type { SyncHistory } from "../proxy/debug-state/history.ts";
import { type HeldSlice, snapshotObjects } from "../proxy/debug-state/snapshot.ts";
import { debugState, type SyncedView } from "../proxy/debug-state/view.ts";
import type { DebugAnswer } from "../proxy/healthcheck/metrics-server.ts";

export interface DebugStateDeps {
  readonly nodeName: string;
  readonly mode: string;
  readonly running: Pick<RunningMode, "families" | "describe">;
  readonly synced: SyncedView & { endpointSlices(): Iterable<HeldSlice> };
  readonly history: SyncHistory;
  /** The Services, ServiceCIDRs and Node as delivered (no slices: see snapshot.ts). */
  readonly delivered: Pick<ObjectStore, "services" | "serviceCIDRs" | "node">;
  readonly host: { readonly exec: Exec; readonly kernel: KernelClient; readonly ipset: IpsetClient };
}

const JSON_TYPE = "application/json";

function badRequest(detail: string): DebugAnswer {
  return { status: 400, contentType: "text/plain; charset=utf-8", body: `${detail}\n` };
}

/** The /debug/state handler; query: format=state (default) or snapshot; output=json|yaml; host=false. */
export function debugStateHandler(d: DebugStateDeps): (query: URLSearchParams) => Promise<DebugAnswer> {
  // Requests that arrive while a probe runs share it: a burst of them spawns one set of commands.
  let probing: Promise<HostState> | undefined;
  const probe = (): Promise<HostState> => {
    probing ??= probeHostState(d.host.exec, d.host.kernel, d.host.ipset).finally(() => {
      probing = undefined;
    });
    return probing;
  };
  return async (query) => {
    const format = query.get("format") ?? "state";
    if (format === "state") {
      const state = debugState({
        nodeName: d.nodeName,
        mode: d.mode,
        families: d.running.families,
        backends: d.running.describe?.() ?? [],
        synced: d.synced,
        history: d.history,
      });
      return { status: 200, contentType: JSON_TYPE, body: `${JSON.stringify(state, null, 1)}\n` };
    }
    if (format !== "snapshot")
      return badRequest(`unknown format ${JSON.stringify(format)}: state or snapshot`);
    const output = query.get("output") ?? "json";
    if (output !== "json" && output !== "yaml")
      return badRequest(`unknown output ${JSON.stringify(output)}: json or yaml`);
    // The objects are taken before the probe's commands run, so they are one moment's view.
    const objects = snapshotObjects(d.delivered, d.synced.endpointSlices());
    const hostState = query.get("host") === "false" ? undefined : await probe();
    const body = renderStateFile(objects, hostState, output);
    return { status: 200, contentType: output === "json" ? JSON_TYPE : "application/yaml", body };
  };
}

// Which cluster view a --dry-run computes its plan from: the --state file when given, else
// the example cluster embedded in the binary (so the node smoke check runs anywhere).

import { readFile } from "node:fs/promises";
import { EXAMPLE_CLUSTER_YAML } from "../generated/example-cluster.ts";
import { type HostState, parseHostState } from "../host/host-state.ts";
import { parseStateDocuments, type StateDocuments } from "../k8s/state-file.ts";

export interface ClusterSnapshot {
  readonly source: string;
  readonly documents: StateDocuments;
  readonly hostState?: HostState;
}

export async function loadSnapshot(stateFile: string | undefined): Promise<ClusterSnapshot> {
  const source = stateFile ?? "examples/cluster.yaml (embedded)";
  const text = stateFile ? await readFile(stateFile, "utf8") : EXAMPLE_CLUSTER_YAML;
  const documents = parseStateDocuments(text, source);
  const hostState = documents.hostState ? parseHostState(documents.hostState) : undefined;
  return { source, documents, ...(hostState ? { hostState } : {}) };
}

export function describeSnapshot(s: ClusterSnapshot): string {
  const d = s.documents;
  const count = (n: number, kind: string) => `${n} ${kind}${n === 1 ? "" : "s"}`;
  const parts = [
    count(d.services.length, "Service"),
    count(d.endpointSlices.length, "EndpointSlice"),
    count(d.nodes.length, "Node"),
  ];
  if (s.hostState) parts.push("a HostState");
  if (d.ignored.length) parts.push(`${d.ignored.length} ignored objects`);
  return `cluster state from ${s.source}: ${parts.join(", ")}`;
}

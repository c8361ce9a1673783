import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { parse, parseAllDocuments } from "yaml";
import { recordingHandler, renderStateFile, stateFileFormatFor } from "../../src/k8s/object-store.ts";
import type { EndpointSliceObject, NodeObject, ServiceObject } from "../../src/k8s/objects.ts";
import { createSnapshotSource, snapshotNodeName } from "../../src/k8s/snapshot-source.ts";
import type { ClusterEventHandler } from "../../src/k8s/source.ts";
import { parseStateDocuments } from "../../src/k8s/state-file.ts";

function journal(): ClusterEventHandler & { log: string[] } {
  const log: string[] = [];
  const name = (o?: { metadata?: { name?: string } }) => o?.metadata?.name ?? "-";
  return {
    log,
    onServiceChange: (p, c) => log.push(`svc ${name(p)} -> ${name(c)}`),
    onEndpointSliceChange: (s, removed) => log.push(`slice ${name(s)}${removed ? " removed" : ""}`),
    onNodeChange: (n) => log.push(`node ${name(n)}`),
    onServiceCIDRChange: (c, removed) => log.push(`cidr ${name(c)}${removed ? " removed" : ""}`),
    onServicesSynced: () => log.push("services synced"),
    onEndpointSlicesSynced: () => log.push("slices synced"),
  };
}

const docs = parseStateDocuments(readFileSync("examples/cluster.yaml", "utf8"), "examples/cluster.yaml");

describe("snapshot source", () => {
  test("delivers every object as an add, then the synced signals, then this node", async () => {
    const j = journal();
    await createSnapshotSource(docs, "node-a").start(j);
    expect(j.log.slice(0, 7)).toEqual([
      "svc - -> web",
      "svc - -> dns",
      "svc - -> shop",
      "svc - -> ingress",
      "svc - -> metrics",
      "svc - -> pending",
      "services synced",
    ]);
    expect(j.log.filter((l) => l.startsWith("slice ")).length).toBe(5);
    expect(j.log.indexOf("slices synced")).toBeGreaterThan(j.log.lastIndexOf("slice metrics-m3n4b"));
    expect(j.log.at(-1)).toBe("node node-a");
  });

  test("another node's name gets no Node object; a stopped source delivers nothing", async () => {
    const j = journal();
    await createSnapshotSource(docs, "node-z").start(j);
    expect(j.log.some((l) => l.startsWith("node"))).toBe(false);
    const stopped = createSnapshotSource(docs, "node-a");
    await stopped.stop();
    const j2 = journal();
    await stopped.start(j2);
    expect(j2.log).toEqual([]);
  });

  test("the node name defaults to the snapshot's only Node", () => {
    expect(snapshotNodeName(docs)).toBe("node-a");
    expect(snapshotNodeName({ ...docs, nodes: [] })).toBeUndefined();
  });
});

describe("ServiceCIDRs in a snapshot", () => {
  const text = [
    "apiVersion: networking.k8s.io/v1",
    "kind: ServiceCIDR",
    "metadata: { name: kubernetes }",
    "spec: { cidrs: [198.51.100.0/24, 2001:db8:5::/112] }",
    "---",
    "apiVersion: v1",
    "kind: Service",
    "metadata: { name: web, namespace: default }",
    "spec: { clusterIP: 198.51.100.10, ports: [{ port: 80 }] }",
  ].join("\n");

  test("are read, not ignored, delivered before the Services, and written back by --dump-state", async () => {
    const parsed = parseStateDocuments(text, "snap.yaml");
    expect(parsed.serviceCIDRs).toHaveLength(1);
    expect(parsed.ignored).toEqual([]);
    const j = journal();
    const { handler, store } = recordingHandler(j);
    await createSnapshotSource(parsed, "node-a").start(handler);
    expect(j.log[0]).toBe("cidr kubernetes");
    const dumped = renderStateFile(store);
    expect(dumped).toContain("kind: ServiceCIDR");
    const again = parseStateDocuments(dumped, "dump.yaml");
    expect(again.serviceCIDRs.map((c) => c.metadata?.name)).toEqual(["kubernetes"]);
  });
});

describe("object store and --dump-state rendering", () => {
  test("tracks adds, updates and deletes, and forwards every call", () => {
    const j = journal();
    const { handler, store } = recordingHandler(j);
    const svc = (name: string, ip: string): ServiceObject => ({
      metadata: { name, namespace: "default" },
      spec: { clusterIP: ip },
    });
    handler.onServiceChange(undefined, svc("a", "198.51.100.1"));
    handler.onServiceChange(svc("a", "198.51.100.1"), svc("a", "198.51.100.2"));
    handler.onServiceChange(undefined, svc("b", "198.51.100.3"));
    handler.onServiceChange(svc("b", "198.51.100.3"), undefined);
    const slice: EndpointSliceObject = {
      metadata: { name: "a-1", namespace: "default" },
      addressType: "IPv4",
    };
    handler.onEndpointSliceChange(slice, false);
    handler.onNodeChange({ metadata: { name: "node-a" } } as NodeObject);
    expect([...store.services.keys()]).toEqual(["default/a"]);
    expect(store.services.get("default/a")?.spec?.clusterIP).toBe("198.51.100.2");
    expect(store.endpointSlices.size).toBe(1);
    handler.onEndpointSliceChange(slice, true);
    expect(store.endpointSlices.size).toBe(0);
    expect(j.log.length).toBe(7);
  });

  test("the dump reads back as the same cluster through the --state parser", async () => {
    const { handler, store } = recordingHandler(journal());
    await createSnapshotSource(docs, "node-a").start(handler);
    const text = renderStateFile(store, {
      apiVersion: "kube-proxy-ts/v1",
      kind: "HostState",
      kernelVersion: "6.1.0",
    });
    const again = parseStateDocuments(text, "dump.yaml");
    expect(again.services.length).toBe(6);
    expect(again.endpointSlices.length).toBe(5);
    expect(again.nodes.length).toBe(1);
    expect(again.hostState?.kernelVersion).toBe("6.1.0");
    const web = parseAllDocuments(text)
      .map((d) => d.toJS())
      .find((o) => o.kind === "Service" && o.metadata.name === "web");
    expect(web).toEqual({ ...parse(JSON.stringify(docs.services[0])) });
  });

  test("a .json dump is one v1 List that reads back as the same cluster as the YAML dump", async () => {
    const { handler, store } = recordingHandler(journal());
    await createSnapshotSource(docs, "node-a").start(handler);
    const host = { apiVersion: "kube-proxy-ts/v1", kind: "HostState", kernelVersion: "6.1.0" } as const;
    expect(stateFileFormatFor("/tmp/dump.JSON")).toBe("json");
    expect(stateFileFormatFor("/tmp/dump.yaml")).toBe("yaml");
    const json = renderStateFile(store, host, "json");
    expect(JSON.parse(json)).toMatchObject({ apiVersion: "v1", kind: "List" });
    const fromJson = parseStateDocuments(json, "dump.json");
    const fromYaml = parseStateDocuments(renderStateFile(store, host), "dump.yaml");
    expect(fromJson).toEqual(fromYaml);
  });
});

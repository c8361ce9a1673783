import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import type { ClusterEventHandler } from "../../src/k8s/source.ts";
import { createStateFileSource } from "../../src/k8s/state-file-source.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { tempDir } from "../support/binary.ts";
import { waitFor } from "../support/wait.ts";

function journal(): ClusterEventHandler & { log: string[] } {
  const log: string[] = [];
  const n = (o?: { metadata?: { name?: string } }) => o?.metadata?.name ?? "-";
  return {
    log,
    onServiceChange: (p, c) => log.push(`svc ${n(p)} -> ${n(c)}`),
    onEndpointSliceChange: (s, removed) => log.push(`slice ${n(s)}${removed ? " removed" : ""}`),
    onNodeChange: (node) => log.push(`node ${n(node)}`),
    onServiceCIDRChange: (c, removed) => log.push(`cidr ${n(c)}${removed ? " removed" : ""}`),
    onServicesSynced: () => log.push("services synced"),
    onEndpointSlicesSynced: () => log.push("slices synced"),
  };
}

const svc = (name: string, ip: string) => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name, namespace: "default" },
  spec: { clusterIP: ip, ports: [{ name: "p", port: 80 }] },
});
const slice = (name: string, svcName: string, ip: string) => ({
  apiVersion: "discovery.k8s.io/v1",
  kind: "EndpointSlice",
  metadata: { name, namespace: "default", labels: { "kubernetes.io/service-name": svcName } },
  addressType: "IPv4",
  endpoints: [{ addresses: [ip] }],
  ports: [{ name: "p", port: 8080 }],
});
const write = (file: string, objs: object[]) =>
  writeFileSync(file, objs.map((o) => stringify(o)).join("---\n"));

describe("--state file source for real runs", () => {
  test("initial delivery, then only differences when the file changes; bad files are ignored", async () => {
    const file = join(tempDir(), "state.yaml");
    write(file, [svc("a", "198.51.100.1"), svc("b", "198.51.100.2"), slice("a-1", "a", "203.0.113.1")]);
    const j = journal();
    const log = memoryLogger();
    const source = createStateFileSource({ path: file, nodeName: "node-a", logger: log, pollMs: 20 });
    await source.start(j);
    expect(j.log).toEqual(["svc - -> a", "svc - -> b", "slice a-1", "services synced", "slices synced"]);
    j.log.length = 0;

    write(file, [svc("a", "198.51.100.1"), svc("c", "198.51.100.3"), slice("a-1", "a", "203.0.113.9")]);
    await waitFor(() => j.log.length >= 3, 3000, "diff delivered");
    expect(j.log.sort()).toEqual(["slice a-1", "svc - -> c", "svc b -> -"]);
    j.log.length = 0;

    writeFileSync(file, "apiVersion: v1\nkind: Service\nmetadata: [broken\n");
    await waitFor(
      () => log.lines.some((l) => l.includes("Ignoring unreadable state file")),
      3000,
      "error logged",
    );
    expect(j.log).toEqual([]);
    await source.stop();
    expect(readFileSync(file, "utf8")).toContain("broken");
  });

  test("a ServiceCIDR added to or removed from the file is delivered like a watch event", async () => {
    const file = join(tempDir(), "state.yaml");
    const cidr = {
      apiVersion: "networking.k8s.io/v1",
      kind: "ServiceCIDR",
      metadata: { name: "extra" },
      spec: { cidrs: ["203.0.113.0/24"] },
    };
    write(file, [svc("a", "198.51.100.1")]);
    const j = journal();
    const source = createStateFileSource({
      path: file,
      nodeName: "node-a",
      logger: memoryLogger(),
      pollMs: 20,
    });
    await source.start(j);
    j.log.length = 0;
    write(file, [svc("a", "198.51.100.1"), cidr]);
    await waitFor(() => j.log.includes("cidr extra"), 10_000, "ServiceCIDR added");
    write(file, [svc("a", "198.51.100.1")]);
    await waitFor(() => j.log.includes("cidr extra removed"), 10_000, "ServiceCIDR removed");
    expect(j.log).toEqual(["cidr extra", "cidr extra removed"]);
    await source.stop();
  });
});

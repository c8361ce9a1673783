import { describe, expect, test } from "bun:test";
import {
  type FieldNotes,
  nodeEligibility,
  nodeInfo,
  nodeIPs,
  nodeName,
  nodePodCIDRs,
} from "../../src/k8s/node-info.ts";
import { resolveNodeName } from "../../src/k8s/node-name.ts";

describe("nodeInfo", () => {
  test("labels, zone, pod CIDRs and node IPs of a dual-stack node", () => {
    const info = nodeInfo({
      metadata: { name: "n1", labels: { "topology.kubernetes.io/zone": "eu-1a", role: "worker" } },
      spec: { podCIDR: "203.0.113.64/26", podCIDRs: ["203.0.113.64/26", "fd00:1::/64"] },
      status: {
        addresses: [
          { type: "Hostname", address: "n1" },
          { type: "ExternalIP", address: "203.0.113.7" },
          { type: "InternalIP", address: "fd00::10" },
          { type: "InternalIP", address: "192.0.2.10" },
        ],
      },
    });
    expect(info.name).toBe("n1");
    expect(info.zone).toBe("eu-1a");
    expect(info.labels.role).toBe("worker");
    expect(info.podCIDRs).toEqual(["203.0.113.64/26", "fd00:1::/64"]);
    expect(info.ips).toEqual({
      ordered: ["fd00::10", "192.0.2.10"],
      ipv4: "192.0.2.10",
      ipv6: "fd00::10",
    });
  });

  test("ExternalIP is used when there is no InternalIP; junk addresses are skipped", () => {
    const ips = nodeIPs({
      status: {
        addresses: [
          { type: "InternalIP", address: "not-an-ip" },
          { type: "ExternalIP", address: "198.51.100.1" },
          { type: "ExternalIP", address: "198.51.100.2" },
        ],
      },
    });
    expect(ips.ordered).toEqual(["198.51.100.1"]);
    expect(ips.ipv6).toBeUndefined();
  });

  test("podCIDR is the fallback for podCIDRs; a bare node has none of anything", () => {
    expect(nodePodCIDRs({ spec: { podCIDR: "203.0.113.0/24" } })).toEqual(["203.0.113.0/24"]);
    const bare = nodeInfo({ metadata: { name: "x" } });
    expect(bare.zone).toBeUndefined();
    expect(bare.podCIDRs).toEqual([]);
    expect(bare.ips.ordered).toEqual([]);
  });
});

function notes(): FieldNotes & { seen: { field: string; value: unknown; detail: string }[] } {
  const seen: { field: string; value: unknown; detail: string }[] = [];
  return { seen, note: (field, value, detail) => seen.push({ field, value, detail }) };
}

describe("Node fields of the wrong type", () => {
  const hostile = {
    metadata: { name: "n1", labels: { role: "worker", count: 3, deep: { a: 1 } } },
    spec: { podCIDRs: "x", podCIDR: 5, taints: 3 },
    status: { addresses: {} },
  };

  test("are noted with field and value and ignored, never thrown", () => {
    const n = notes();
    const info = nodeInfo(hostile, n);
    expect(info).toEqual({ name: "n1", labels: { role: "worker" }, podCIDRs: [], ips: { ordered: [] } });
    expect(n.seen.map((s) => [s.field, s.value])).toEqual([
      ['metadata.labels["count"]', 3],
      ['metadata.labels["deep"]', { a: 1 }],
      ["spec.podCIDRs", "x"],
      ["spec.podCIDR", 5],
      ["status.addresses", {}],
    ]);
    expect(nodeEligibility(hostile)).toEqual({ metadata: {}, spec: { taints: [] } });
  });

  test("labels that are not an object, and sections that are not objects", () => {
    const n = notes();
    const info = nodeInfo({ metadata: { name: 5, labels: "x" }, spec: [], status: "up" }, n);
    expect(info).toEqual({ name: "", labels: {}, podCIDRs: [], ips: { ordered: [] } });
    expect(n.seen.map((s) => s.field)).toEqual(["spec", "status", "metadata.labels", "metadata.name"]);
    for (const node of [null, undefined, 5, "node", [1, 2], { metadata: null }]) {
      expect(nodeInfo(node).labels).toEqual({});
      expect(nodeIPs(node).ordered).toEqual([]);
      expect(nodePodCIDRs(node)).toEqual([]);
      expect(nodeName(node)).toBe("");
      expect(nodeEligibility(node).spec.taints).toEqual([]);
    }
  });

  test("bad entries inside lists are skipped, good ones kept", () => {
    const n = notes();
    const node = {
      metadata: { name: "n1", labels: { "topology.kubernetes.io/zone": "zone a" } },
      spec: { podCIDRs: [7, "not-a-cidr", "203.0.113.0/26"], taints: [null, { key: 5 }, { key: "k" }] },
      status: {
        addresses: [
          "192.0.2.1",
          { type: "InternalIP", address: 7 },
          { type: 3, address: "192.0.2.2" },
          { type: "InternalIP", address: " 192.0.2.3 " },
        ],
      },
    };
    const info = nodeInfo(node, n);
    expect(info.zone).toBeUndefined();
    expect(info.podCIDRs).toEqual(["203.0.113.0/26"]);
    expect(info.ips.ordered).toEqual(["192.0.2.3"]);
    expect(nodeEligibility(node, n).spec.taints).toEqual([{ key: "k" }]);
    expect(n.seen.map((s) => s.field)).toEqual([
      'metadata.labels["topology.kubernetes.io/zone"]',
      "spec.podCIDRs[0]",
      "spec.podCIDRs[1]",
      "status.addresses[0]",
      "status.addresses[1].address",
      "status.addresses[2].type",
      "spec.taints[0]",
      "spec.taints[1].key",
    ]);
  });

  test("a __proto__ label stays a label", () => {
    const labels = nodeInfo(JSON.parse('{"metadata":{"labels":{"__proto__":"x","a":"b"}}}')).labels;
    expect(Object.keys(labels).sort()).toEqual(["__proto__", "a"]);
    expect(Object.getPrototypeOf(labels)).toBe(Object.prototype);
  });

  test("deletion: a stamp text or Date; taints by key", () => {
    const at = new Date("2024-01-01T00:00:00Z");
    expect(nodeEligibility({ metadata: { deletionTimestamp: at } }).metadata.deletionTimestamp).toBe(
      at.toISOString(),
    );
    expect(nodeEligibility({ metadata: { deletionTimestamp: "2024-01-01T00:00:00Z" } }).metadata).toEqual({
      deletionTimestamp: "2024-01-01T00:00:00Z",
    });
    expect(nodeEligibility({ metadata: { deletionTimestamp: 5 } }).metadata).toEqual({});
  });
});

describe("resolveNodeName", () => {
  test("the override wins, trimmed and lower-cased", () => {
    expect(resolveNodeName("  Node-A.Example ", () => "ignored")).toBe("node-a.example");
  });

  test("without an override the hostname is used the same way", () => {
    expect(resolveNodeName("", () => "WORKER-3\n")).toBe("worker-3");
    expect(resolveNodeName(undefined, () => "w")).toBe("w");
  });

  test("an empty result is an error, even from an override of spaces", () => {
    expect(() => resolveNodeName("   ", () => "host")).toThrow("empty hostname is invalid");
    expect(() => resolveNodeName("", () => " ")).toThrow("empty hostname is invalid");
  });
});

import { describe, expect, test } from "bun:test";
import { nodeInfo, nodeIPs, nodePodCIDRs } from "../../src/k8s/node-info.ts";
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

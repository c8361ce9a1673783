import { describe, expect, test } from "bun:test";
import { memoryLogger } from "../../src/log/logger.ts";
import {
  detectLocalByBridgeInterface,
  detectLocalByCIDR,
  detectLocalByInterfaceNamePrefix,
  firstCIDROfFamily,
  type LocalDetectInput,
  localDetectorFor,
  localDetectors,
  noOpLocalDetector,
} from "../../src/proxy/local-detect.ts";

const base: LocalDetectInput = {
  mode: "ClusterCIDR",
  clusterCIDRs: ["192.0.2.0/24", "2001:db8:1::/48"],
  nodePodCIDRs: ["192.0.2.0/26", "2001:db8:1:2::/64"],
  bridgeInterface: "cbr0",
  interfaceNamePrefix: "veth",
};

describe("detectors", () => {
  test("by CIDR: source match, per family", () => {
    expect(detectLocalByCIDR("192.0.2.0/24")).toMatchObject({
      implemented: true,
      ifLocal: ["-s", "192.0.2.0/24"],
      ifNotLocal: ["!", "-s", "192.0.2.0/24"],
      ifLocalNFT: ["ip", "saddr", "192.0.2.0/24"],
      ifNotLocalNFT: ["ip", "saddr", "!=", "192.0.2.0/24"],
    });
    expect(detectLocalByCIDR("2001:db8:1::/48").ifLocalNFT).toEqual(["ip6", "saddr", "2001:db8:1::/48"]);
  });

  test("by bridge interface: -i BRIDGE", () => {
    const d = detectLocalByBridgeInterface("cbr0");
    expect(d.ifLocal).toEqual(["-i", "cbr0"]);
    expect(d.ifNotLocal).toEqual(["!", "-i", "cbr0"]);
    expect(d.ifNotLocalNFT).toEqual(["iifname", "!=", "cbr0"]);
  });

  test("by interface name prefix: -i PREFIX+ (nft: PREFIX*)", () => {
    const d = detectLocalByInterfaceNamePrefix("veth");
    expect(d.ifLocal).toEqual(["-i", "veth+"]);
    expect(d.ifNotLocal).toEqual(["!", "-i", "veth+"]);
    expect(d.ifLocalNFT).toEqual(["iifname", "veth*"]);
  });

  test("the no-op detector matches nothing and says so", () => {
    expect(noOpLocalDetector.implemented).toBe(false);
    expect(noOpLocalDetector.ifLocal).toEqual([]);
    expect(noOpLocalDetector.ifNotLocal).toEqual([]);
  });
});

describe("detector per mode and family", () => {
  test("ClusterCIDR uses the cluster CIDR of the family", () => {
    expect(localDetectorFor(base, "IPv4").ifLocal).toEqual(["-s", "192.0.2.0/24"]);
    expect(localDetectorFor(base, "IPv6").ifLocal).toEqual(["-s", "2001:db8:1::/48"]);
  });

  test("NodeCIDR uses the Node's pod CIDR of the family", () => {
    const input = { ...base, mode: "NodeCIDR" as const };
    expect(localDetectorFor(input, "IPv4").ifNotLocal).toEqual(["!", "-s", "192.0.2.0/26"]);
    expect(localDetectorFor(input, "IPv6").ifNotLocal).toEqual(["!", "-s", "2001:db8:1:2::/64"]);
  });

  test("a CIDR mode without a CIDR of the family is a no-op for that family only", () => {
    const v4only = { ...base, clusterCIDRs: ["192.0.2.0/24"] };
    expect(localDetectorFor(v4only, "IPv4").implemented).toBe(true);
    expect(localDetectorFor(v4only, "IPv6")).toBe(noOpLocalDetector);
    expect(localDetectorFor({ ...base, mode: "NodeCIDR", nodePodCIDRs: [] }, "IPv4")).toBe(noOpLocalDetector);
  });

  test("interface modes apply to both families alike", () => {
    const bridge = { ...base, mode: "BridgeInterface" as const };
    expect(localDetectorFor(bridge, "IPv4").ifLocal).toEqual(["-i", "cbr0"]);
    expect(localDetectorFor(bridge, "IPv6").ifLocal).toEqual(["-i", "cbr0"]);
    const prefix = { ...base, mode: "InterfaceNamePrefix" as const };
    expect(localDetectorFor(prefix, "IPv6").ifLocal).toEqual(["-i", "veth+"]);
  });

  test("the first CIDR of the family wins and is canonicalised", () => {
    expect(firstCIDROfFamily(["2001:db8::/32", "192.0.2.7/24", "198.51.100.0/24"], "IPv4")).toBe(
      "192.0.2.0/24",
    );
    expect(firstCIDROfFamily(["bogus", "2001:DB8::/32"], "IPv6")).toBe("2001:db8::/32");
    expect(firstCIDROfFamily(["192.0.2.0/24"], "IPv6")).toBeUndefined();
  });

  test("missing primary-family CIDR is logged, as upstream does", () => {
    const logger = memoryLogger();
    const out = localDetectors({ ...base, clusterCIDRs: ["2001:db8:1::/48"], logger }, "IPv4");
    expect(out.IPv4.implemented).toBe(false);
    expect(out.IPv6.implemented).toBe(true);
    expect(logger.lines.join("\n")).toContain("no cluster CIDR specified for primary IP family");
  });
});

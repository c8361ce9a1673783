// `nft list table` text read into the tracer's table model (src/host/nft/listing.ts): a listing
// the real nft 1.0.6 printed for examples/cluster.yaml's rules (fixtures/), traced; and the
// simulator's own `list table` answer, which must read back into the table it holds.

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SimulatedExec } from "../../../src/exec/simulated.ts";
import { parseNftListing, parsePriority } from "../../../src/host/nft/listing.ts";
import { SimulatedNft } from "../../../src/host/nft/simulator.ts";
import { tracePacket } from "../../../src/host/nft/trace.ts";

const fixture = (name: string) => readFileSync(join(import.meta.dir, "fixtures", name), "utf8");
const NODE = ["192.0.2.10"];

describe("nft listing", () => {
  const listed = parseNftListing(fixture("example-cluster.list.txt"))!;

  test("the real listing: table, base chains with named and numeric priorities, maps with comments", () => {
    expect(listed.family).toBe("ip");
    expect(listed.name).toBe("kube-proxy");
    expect(listed.table.comment).toBe("rules for kube-proxy");
    expect(listed.table.chains.get("filter-prerouting-pre-dnat")?.base).toEqual({
      type: "filter",
      hook: "prerouting",
      priority: -110,
    });
    expect(listed.table.chains.get("filter-output-pre-dnat")?.base?.priority).toBe(-110);
    expect(listed.table.chains.get("nat-postrouting")?.base?.priority).toBe(100);
    expect(listed.table.chains.get("reject-chain")).toEqual({
      comment: "helper for @no-endpoint-services / @no-endpoint-nodeports",
      rules: ["reject"],
    });
    // An element's comment is not part of its key.
    expect([...listed.table.maps.get("no-endpoint-services")!.elements]).toEqual([
      ["198.51.100.50 . tcp . 9000", "goto reject-chain"],
    ]);
    expect(listed.table.maps.get("service-ips")!.elements.size).toBe(8);
    expect(listed.table.sets.get("cluster-ips")!.elements.size).toBe(6);
    expect(listed.table.sets.get("nodeport-ips")!.elements.size).toBe(0);
  });

  test("priorities as nft prints them", () => {
    expect(parsePriority("dstnat - 10")).toBe(-110);
    expect(parsePriority("srcnat")).toBe(100);
    expect(parsePriority("filter + 5")).toBe(5);
    expect(parsePriority("-110")).toBe(-110);
    expect(parsePriority("sideways")).toBeUndefined();
  });

  test("the tracer reads nft's spelling of the rules (meta mark &, |, ^)", () => {
    const trace = (saddr: string, daddr: string, dport: number) =>
      tracePacket(listed.table, { saddr, daddr, dport, protocol: "tcp" }, { family: "ip", localIPs: NODE });
    const web = trace("203.0.113.5", "198.51.100.10", 80);
    expect(web.output).toBe("203.0.113.11:8080, 203.0.113.71:8080");
    expect(web.paths.map((p) => p.probability)).toEqual([0.5, 0.5]);
    expect(trace("203.0.113.5", "198.51.100.50", 9000).output).toBe("REJECT");
    expect(trace("198.51.100.7", "192.0.2.200", 443).output).toBe("DROP");
    expect(trace("203.0.113.130", "192.0.2.200", 443).output).toBe("203.0.113.40:8443");
    // From the node: the external chain's mark, then masquerading's `meta mark & ... != 0`.
    const local = trace("192.0.2.10", "192.0.2.100", 443);
    expect(local.output).toBe("203.0.113.100:8443, 203.0.113.40:8443");
    expect(local.paths.every((p) => p.masq)).toBe(true);
    // The node is outside the LoadBalancer IP's source ranges.
    expect(trace("192.0.2.10", "192.0.2.200", 443).output).toBe("DROP");
  });

  test("the simulator lists a table the way it reads back", async () => {
    const nft = new SimulatedNft();
    const exec = nft.install(new SimulatedExec());
    const applied = await exec.run({ cmd: "nft", args: ["-f", "-"], stdin: fixture("example-cluster.nft") });
    expect(applied.code, applied.stderr).toBe(0);
    const out = await exec.run({ cmd: "nft", args: ["list", "table", "ip", "kube-proxy"] });
    expect(out.code).toBe(0);
    const back = parseNftListing(out.stdout)!;
    expect(back.table).toEqual(nft.tableState("ip", "kube-proxy")!);
    const missing = await exec.run({ cmd: "nft", args: ["list", "table", "ip6", "kube-proxy"] });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("No such file or directory");
  });
});

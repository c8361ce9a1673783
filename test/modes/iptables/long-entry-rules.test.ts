// A port with more top-level nat lines than one restore entry holds (a Service with thousands of
// externalIPs) keeps no text of them: they are written each time a restore reads them. Full,
// partial and chunk-reusing syncs must write exactly what a full sync of the same state writes,
// the counts must match what is written, and an input read twice must read the same.

import { describe, expect, test } from "bun:test";
import { LINES_PER_TEXT } from "../../../src/modes/iptables/port-lines.ts";
import { chainRules, endpointSlice, ep, service, setup, tableGauge, tableSection } from "./harness.ts";
import { overallIPv4 } from "./scenarios.ts";

const IPS = LINES_PER_TEXT + 900;
const externalIPs = Array.from({ length: IPS }, (_, i) => `203.0.${113 + (i >> 8)}.${i & 255}`);

const wide = (port: number) =>
  service("ns9", "wide", {
    clusterIP: "198.51.100.90",
    externalIPs,
    ports: [{ name: "p80", port, protocol: "TCP" }],
  });

describe("a port whose nat lines are written as they are read", () => {
  test("full, partial and chunk-reusing syncs write what a full sync writes; counts match", async () => {
    const s = setup();
    // Enough Services that the wide port's chunk of ports is not the changed one's: it is
    // then reused whole.
    const many = Array.from({ length: 300 }, (_, i) =>
      service("ns5", `s${String(i).padStart(3, "0")}`, { clusterIP: `198.51.${100 + (i >> 8)}.${i & 255}` }),
    );
    s.cluster.apply(...overallIPv4(), ...many, wide(8080), endpointSlice("ns9", "wide", [ep("192.0.2.90")]));
    const full = await s.sync();
    const services = chainRules(full, "nat", "KUBE-SERVICES");
    const ext = services.filter((l) => l.includes('"ns9/wide:p80 external IP"'));
    expect(ext).toHaveLength(IPS);
    // In the list's order, each its own line.
    expect(ext[IPS - 1]).toContain(`-d ${externalIPs[IPS - 1]} --dport 8080 `);
    const written = (payload: string) => tableSection(payload, "nat").filter((l) => l.startsWith("-A "));
    expect(await tableGauge(s.metrics.iptablesRulesLastSync, "nat")).toBe(written(full).length);

    // Another Service's endpoints change: the wide port is reused, not rendered.
    s.cluster.apply(endpointSlice("ns1", "svc1", [ep("192.0.2.111")]));
    const partial = await s.sync();
    expect(await tableGauge(s.metrics.iptablesRulesLastSync, "nat")).toBe(written(partial).length);
    s.proxier.requestFullSync();
    const again = await s.sync();
    expect(chainRules(partial, "nat", "KUBE-SERVICES")).toEqual(chainRules(again, "nat", "KUBE-SERVICES"));

    // The wide Service itself changes in a partial sync, then a neighbour's endpoints again.
    s.cluster.apply(wide(8081));
    const changed = await s.sync();
    const moved = chainRules(changed, "nat", "KUBE-SERVICES").filter((l) => l.includes("external IP"));
    expect(moved.filter((l) => l.includes("--dport 8081 "))).toHaveLength(IPS);
    s.cluster.apply(endpointSlice("ns1", "svc1", [ep("192.0.2.112")]));
    const later = await s.sync();
    s.proxier.requestFullSync();
    const fullLater = await s.sync();
    expect(tableSection(later, "nat").filter((l) => l.startsWith("-A KUBE-SERVICES"))).toEqual(
      tableSection(fullLater, "nat").filter((l) => l.startsWith("-A KUBE-SERVICES")),
    );
    expect(await tableGauge(s.metrics.iptablesRulesLastSync, "nat")).toBe(written(fullLater).length);

    // The input of the last restore reads the same twice (an error's context reads it again).
    const input = s.ipt.inputs.at(-1)!;
    expect([...input].join("")).toBe(fullLater);
    expect([...input].join("")).toBe(fullLater);
  });
});

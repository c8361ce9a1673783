// The iptables mode with Service names and endpoints no API server would accept: every comment
// it writes goes through restore-text, so the rules of such a port stay one line each, the
// restore input stays valid for the real iptables-restore (both backends, in a netns), and no
// injected rule reaches a built-in chain. Valid names keep upstream's exact text (the golden
// tests); here the rule writers are driven directly, as edge validation would stop these names.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DEFAULT_FEATURE_GATES } from "../../../src/config/feature-gates.ts";
import { commentText } from "../../../src/host/iptables/restore-text.ts";
import { splitRuleLine } from "../../../src/host/iptables/rule-args.ts";
import { parseIptablesSave } from "../../../src/host/iptables/save-parser.ts";
import { arrayLineSink } from "../../../src/modes/iptables/port-lines.ts";
import { ServicePortNames } from "../../../src/modes/iptables/port-names.ts";
import { ProbabilityCache } from "../../../src/modes/iptables/probability.ts";
import { type ChainSink, writeServiceChains } from "../../../src/modes/iptables/service-chains.ts";
import { planServicePort } from "../../../src/modes/iptables/service-plan.ts";
import { type EntryRuleSink, writeEntryRules } from "../../../src/modes/iptables/service-rules.ts";
import type { FamilyServicePort } from "../../../src/proxy/family-view.ts";
import { detectLocalByCIDR } from "../../../src/proxy/local-detect.ts";
import {
  chainLine,
  KUBE_EXTERNAL_SERVICES,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
} from "../../../src/proxy/netfilter/chains.ts";
import type { EndpointInfo } from "../../../src/proxy/types.ts";
import { createTestNetns, type TestNetns } from "../../host/iptables/netns.ts";
import { endpointInfo } from "../../support/endpoint-info.ts";
import { INJECTIONS } from "../../support/hostile-text.ts";

const endpoint = (ip: string, port: number): EndpointInfo =>
  endpointInfo(ip, port, { nodeName: "node-a", isLocal: true });

/** A LoadBalancer port with every kind of address, so every comment-writing rule is written. */
function hostilePort(i: number, name: string, affinity: boolean): FamilyServicePort {
  return {
    name: { namespace: "ns", name, port: "p", protocol: "TCP" },
    id: `ns/${name}:p`,
    clusterIPs: { IPv4: `198.51.100.${10 + i}` },
    clusterIP: `198.51.100.${10 + i}`,
    port: 80,
    protocol: "TCP",
    nodePort: 30000 + i,
    externalIPs: [`192.0.2.${130 + i}`],
    loadBalancerVIPs: [`192.0.2.${200 + i}`],
    loadBalancerSourceRanges: ["192.0.2.0/26"],
    sessionAffinity: { type: affinity ? "ClientIP" : "None", timeoutSeconds: 10800 },
    externalPolicyLocal: i % 2 === 0,
    internalPolicyLocal: false,
    healthCheckNodePort: i % 2 === 0 ? 31000 + i : 0,
    topologyMode: "",
    trafficDistribution: "",
    serviceType: "LoadBalancer",
    isExternal: true,
  };
}

/** The restore input the mode would write for these ports (and an unserved one), both tables. */
function restoreFor(names: readonly string[]): string {
  const nat: string[] = [];
  const filter: string[] = [];
  const chains: string[] = [];
  const settings = {
    masqueradeAll: false,
    localDetector: detectLocalByCIDR("203.0.113.0/24"),
    nodeIP: "192.0.2.10",
    largeClusterMode: false,
    probabilities: new ProbabilityCache(),
  };
  const topology = { nodeName: "node-a", nodeLabels: {}, featureGates: DEFAULT_FEATURE_GATES };
  names.forEach((name, i) => {
    const svc = hostilePort(i, name, i % 3 === 0);
    const portNames = new ServicePortNames(svc.id, svc.protocol);
    // The last port has no endpoints, so its filter REJECT rules are written too.
    const eps =
      i === names.length - 1 ? [] : [endpoint(`203.0.113.${10 + i}`, 8080), endpoint("203.0.113.99", 8080)];
    const plan = planServicePort(svc, eps, portNames, topology);
    const sink: EntryRuleSink = { nat: arrayLineSink(nat), filter: arrayLineSink(filter) };
    writeEntryRules(svc, portNames, plan, { countLocalhostNodePorts: false }, sink);
    const out: ChainSink = { chains, rules: nat, active: [] };
    writeServiceChains(svc, portNames, plan, settings, out);
  });
  return [
    "*nat",
    ...[KUBE_SERVICES, KUBE_NODEPORTS, KUBE_MARK_MASQ].map(chainLine),
    ...chains.map(chainLine),
    ...nat,
    "COMMIT",
    "*filter",
    ...[KUBE_SERVICES, KUBE_EXTERNAL_SERVICES, KUBE_NODEPORTS, KUBE_PROXY_FIREWALL].map(chainLine),
    ...filter,
    "COMMIT",
    "",
  ].join("\n");
}

const NAMES = INJECTIONS.map(([, text]) => text);

describe("iptables mode: hostile Service names stay inside their comments", () => {
  test("each rule is one line whose comments are the names as restore-text keeps them", () => {
    const input = restoreFor(NAMES);
    const lines = input.split("\n");
    // No line the tool would read as a table, COMMIT or comment but ours.
    expect(lines.filter((l) => l.startsWith("*"))).toEqual(["*nat", "*filter"]);
    expect(lines.filter((l) => l === "COMMIT")).toHaveLength(2);
    expect(lines.filter((l) => l.startsWith("#"))).toEqual([]);
    for (const line of lines.filter((l) => !l.startsWith(":") && !l.startsWith("*") && l !== "COMMIT")) {
      const args = splitRuleLine(line);
      // Rules only, only in our chains, each with at most one comment of at most 255 bytes.
      expect(line === "" || (args[0] === "-A" && args[1]!.startsWith("KUBE-"))).toBe(true);
      expect(args.filter((a) => a === "--comment").length).toBeLessThanOrEqual(1);
      const at = args.indexOf("--comment");
      if (at >= 0) expect(Buffer.byteLength(args[at + 1]!)).toBeLessThanOrEqual(255);
    }
  });

  for (const backend of ["legacy", "nft"] as const) {
    describe(`iptables-${backend}-restore in a netns`, () => {
      let ns: TestNetns;
      beforeAll(async () => {
        ns = await createTestNetns();
      });
      afterAll(async () => {
        await ns?.remove();
      });

      test("takes the whole input; the built-in chains stay empty; comments saved as kept", async () => {
        const input = restoreFor(NAMES);
        const res = await ns.exec.run({ cmd: `iptables-${backend}-restore`, args: [], stdin: input });
        expect({ code: res.code, stderr: res.stderr.replace(/^# Warning.*\n/m, "") }).toEqual({
          code: 0,
          stderr: "",
        });
        const save = await ns.exec.run({ cmd: `iptables-${backend}-save`, args: [] });
        const tables = parseIptablesSave(save.stdout);
        for (const table of tables.values()) {
          for (const chain of ["INPUT", "OUTPUT", "FORWARD", "PREROUTING", "POSTROUTING"]) {
            expect({ table: table.name, chain, rules: table.chains.get(chain)?.rules ?? [] }).toEqual({
              table: table.name,
              chain,
              rules: [],
            });
          }
        }
        const comments = new Set<string>();
        for (const table of tables.values())
          for (const chain of table.chains.values())
            for (const rule of chain.rules) {
              const args = splitRuleLine(rule);
              const at = args.indexOf("--comment");
              if (at >= 0) comments.add(args[at + 1]!);
            }
        for (const name of NAMES) {
          expect(comments.has(commentText(`ns/${name}:p cluster IP`))).toBe(true);
        }
      }, 60_000);
    });
  }
});

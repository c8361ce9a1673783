// The nftables mode with Service names and endpoints no API server would accept. Upstream's
// chain names embed namespace, name and port name, so such a port cannot be named to nft: it
// is skipped with one logged error, and every other port still syncs; comments (the port's
// name on its elements) are escaped instead. TableSync is driven directly with such ports, as
// edge validation would stop them before the proxier, and the transaction it writes goes to the
// real nft in a netns and to the fake.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DEFAULT_FEATURE_GATES } from "../../../src/config/feature-gates.ts";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { FakeNft } from "../../../src/host/nft/testing/fake.ts";
import { NftTransaction } from "../../../src/host/nft/transaction.ts";
import { memoryLogger } from "../../../src/log/logger.ts";
import { KUBE_PROXY_TABLE } from "../../../src/modes/nftables/names.ts";
import { familyWords } from "../../../src/modes/nftables/setup.ts";
import { TableSync, type TableSyncRequest } from "../../../src/modes/nftables/table-sync.ts";
import { noOpLocalDetector } from "../../../src/proxy/local-detect.ts";
import type { SyncInput } from "../../../src/proxy/proxier.ts";
import {
  type EndpointInfo,
  plainEndpoint,
  plainServicePort,
  type ServicePortInfo,
  serviceKey,
} from "../../../src/proxy/types.ts";
import { createTestNetns, type TestNetns } from "../../host/iptables/netns.ts";
import { INJECTIONS } from "../../support/hostile-text.ts";
import { Cluster, endpointSlice, ep, service } from "../../support/proxy-cluster.ts";

interface ExtraPort {
  readonly svc: ServicePortInfo;
  readonly endpoints: readonly EndpointInfo[];
}

/** The cluster's input with more service ports beside its own (only what TableSync reads). */
function inputWith(base: SyncInput, extra: ReadonlyMap<string, ExtraPort>): SyncInput {
  const ids = () => [...base.services.keys(), ...extra.keys()];
  const services = {
    keys: () => ids()[Symbol.iterator](),
    entries: () =>
      ids()
        .map((id) => [id, services.get(id)!] as const)
        [Symbol.iterator](),
    get: (id: string) => extra.get(id)?.svc ?? base.services.get(id),
    has: (id: string) => extra.has(id) || base.services.has(id),
    get size() {
      return ids().length;
    },
    portsOf: (key: string) =>
      ids()
        .map((id) => services.get(id)!)
        .filter((s) => serviceKey(s.name.namespace, s.name.name) === key),
  };
  const endpoints = {
    get: (id: string) => extra.get(id)?.endpoints ?? base.endpoints.get(id),
    portName: (id: string) => extra.get(id)?.svc.name ?? base.endpoints.portName(id),
  };
  return { ...base, services, endpoints } as unknown as SyncInput;
}

/** A copy of a real service port under another name, optionally with other endpoints. */
function renamed(
  svc: ServicePortInfo,
  eps: readonly EndpointInfo[],
  name: string,
  clusterIP: string,
  endpointIP?: string,
): ExtraPort {
  const id = `ns/${name}:p80`;
  const endpoints = endpointIP
    ? eps.map((e) => ({ ...plainEndpoint(e), ip: endpointIP, endpoint: `${endpointIP}:${e.port}` }))
    : eps;
  return {
    svc: {
      ...plainServicePort(svc),
      id,
      name: { ...svc.name, name },
      clusterIPs: { IPv4: clusterIP },
      sessionAffinity: { type: "ClientIP", timeoutSeconds: 300 },
    },
    endpoints,
  };
}

function request(input: SyncInput): TableSyncRequest {
  return {
    input,
    fullSync: true,
    changedServices: new Set(),
    setup: {
      family: "IPv4",
      mark: "0x00004000",
      masqueradeAll: false,
      ifNotLocal: undefined,
      nodePortIPs: undefined,
    },
    serviceCIDRs: [],
    existing: { chains: [], sets: [] },
    rules: {
      words: familyWords("IPv4"),
      mark: "0x00004000",
      localDetector: noOpLocalDetector,
      nodeIP: "192.0.2.10",
      topology: { nodeName: "node-a", nodeLabels: {}, featureGates: DEFAULT_FEATURE_GATES },
    },
    now: 0,
  };
}

function scenario() {
  const cluster = new Cluster();
  cluster.apply(
    service("ns", "good", { clusterIP: "198.51.100.1", clusterIPs: ["198.51.100.1"] }),
    endpointSlice("ns", "good", [ep("203.0.113.10"), ep("203.0.113.11")]),
  );
  const base = cluster.input();
  const goodId = [...base.services.keys()][0]!;
  const good = base.services.get(goodId)!;
  const goodEps = base.endpoints.get(goodId) ?? [];
  const extra = new Map<string, ExtraPort>();
  INJECTIONS.forEach(([, text], i) => {
    const port = renamed(good, goodEps, text, `198.51.100.${10 + i}`);
    extra.set(port.svc.id, port);
  });
  // A valid name whose endpoint address would end the element and start another statement.
  const badEndpoint = renamed(good, goodEps, "bad-endpoint", "198.51.100.99", "203.0.113.12; flush ruleset");
  extra.set(badEndpoint.svc.id, badEndpoint);
  return { input: inputWith(base, extra), goodName: good.name, hostileIds: [...extra.keys()] };
}

describe("nftables mode: a port whose names nft cannot take is skipped, the rest syncs", () => {
  let ns: TestNetns;
  beforeAll(async () => {
    ns = await createTestNetns();
  });
  afterAll(async () => {
    await ns?.remove();
  });

  test("one error per skipped port, once; the transaction applies to the real nft and the fake", async () => {
    const { input, hostileIds } = scenario();
    const log = memoryLogger();
    const table = new TableSync("IPv4", log);
    const tx = new NftTransaction("ip", KUBE_PROXY_TABLE);
    const result = table.write(tx, request(input));
    const text = tx.render();
    // The good port got its chains, and so did the 300-character name (made of name
    // characters, its chain names are cut to nft's length); every other one was skipped.
    expect(result.rewrittenPorts).toBe(2);
    expect(text).toContain("ns/good/tcp/p80");
    expect(text).toContain(`ns/${"a".repeat(200)}`);
    const skipped = log.lines.filter((l) => l.includes("Skipping service port"));
    expect(skipped).toHaveLength(hostileIds.length - 1);
    for (const line of text.split("\n")) expect(line).not.toContain("flush ruleset");

    const real = await ns.exec.run({ cmd: "nft", args: ["-f", "-"], stdin: text });
    expect({ code: real.code, stderr: real.stderr }).toEqual({ code: 0, stderr: "" });
    const fake = new FakeNft();
    const fakeRes = await fake.install(new FakeExec()).run({ cmd: "nft", args: ["-f", "-"], stdin: text });
    expect(fakeRes.code).toBe(0);
    const listed = (await ns.exec.run({ cmd: "nft", args: ["list", "chains", "ip"] })).stdout;
    const fakeChains = [...fake.tableState("ip", KUBE_PROXY_TABLE)!.chains.keys()].sort();
    const realChains = [...listed.matchAll(/\tchain (\S+) \{/g)].map((m) => m[1]!).sort();
    expect(fakeChains).toEqual(realChains);

    // The next full sync says nothing new about the same ports.
    const again = new NftTransaction("ip", KUBE_PROXY_TABLE);
    table.write(again, request(input));
    again.render();
    expect(log.lines.filter((l) => l.includes("Skipping service port"))).toHaveLength(hostileIds.length - 1);
  }, 60_000);
});

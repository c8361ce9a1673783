// Upstream v1.37's TestInternalExternalMasquerade, transcribed (research:
// test-TestInternalExternalMasquerade.txt, proxier_test.go @ e467a91f): three LoadBalancer
// Services (all-Cluster, eTP=Local, iTP=Local), each with a local and a remote endpoint, traced
// from a pod, the node and an outside client to each ClusterIP, NodePort and LB IP, under four
// set-ups (masqueradeAll on or off, local-traffic detection by pod CIDR or none). The base table
// is upstream's; each set-up overrides the rows upstream's test overrides.

import { beforeAll, describe } from "bun:test";
import type { FakeNftTable } from "../../../src/host/nft/testing/fake.ts";
import type { EndpointSliceObject, ServiceObject } from "../../../src/k8s/objects.ts";
import { endpointSlice, ep, NODE, service } from "../../support/proxy-cluster.ts";
import { type Flow, flows, traceFlows } from "./flows.ts";
import {
  type FakeProxierOptions,
  newFakeProxier,
  TRACER_NODE_IPS,
  tableSnapshot,
} from "./upstream-fake-proxier.ts";

function objects(): (ServiceObject | EndpointSliceObject)[] {
  const p80 = { name: "p80", port: 80, protocol: "TCP" };
  const lb = (
    n: number,
    policy: { externalTrafficPolicy?: string; internalTrafficPolicy?: string },
    ingress: string,
  ): ServiceObject =>
    service(
      `ns${n}`,
      `svc${n}`,
      {
        type: "LoadBalancer",
        clusterIP: `172.30.0.4${n}`,
        clusterIPs: [`172.30.0.4${n}`],
        ipFamilies: ["IPv4"],
        ports: [{ ...p80, nodePort: 3000 + n }],
        healthCheckNodePort: 30000 + n,
        ...policy,
      },
      { loadBalancer: { ingress: [{ ip: ingress }] } },
    );
  const slice = (n: number) =>
    endpointSlice(
      `ns${n}`,
      `svc${n}`,
      [ep(`10.180.0.${n}`, { node: NODE }), ep(`10.180.1.${n}`, { node: "remote" })],
      { ports: [p80], suffix: "1" },
    );
  return [
    lb(1, {}, "1.2.3.4"),
    slice(1),
    lb(2, { externalTrafficPolicy: "Local" }, "5.6.7.8"),
    slice(2),
    lb(3, { internalTrafficPolicy: "Local" }, "9.10.11.12"),
    slice(3),
  ];
}

const BASE = flows(`
  pod to ClusterIP                     | 10.0.0.2    | 172.30.0.41:80   | 10.180.0.1:80, 10.180.1.1:80 | false
  pod to NodePort                      | 10.0.0.2    | 192.168.0.2:3001 | 10.180.0.1:80, 10.180.1.1:80 | true
  pod to LB                            | 10.0.0.2    | 1.2.3.4:80       | 10.180.0.1:80, 10.180.1.1:80 | true
  node to ClusterIP                    | 192.168.0.2 | 172.30.0.41:80   | 10.180.0.1:80, 10.180.1.1:80 | true
  node to NodePort                     | 192.168.0.2 | 192.168.0.2:3001 | 10.180.0.1:80, 10.180.1.1:80 | true
  node to LB                           | 192.168.0.2 | 1.2.3.4:80       | 10.180.0.1:80, 10.180.1.1:80 | true
  external to ClusterIP                | 203.0.113.2 | 172.30.0.41:80   | 10.180.0.1:80, 10.180.1.1:80 | true
  external to NodePort                 | 203.0.113.2 | 192.168.0.2:3001 | 10.180.0.1:80, 10.180.1.1:80 | true
  external to LB                       | 203.0.113.2 | 1.2.3.4:80       | 10.180.0.1:80, 10.180.1.1:80 | true
  pod to ClusterIP with eTP:Local      | 10.0.0.2    | 172.30.0.42:80   | 10.180.0.2:80, 10.180.1.2:80 | false
  pod to NodePort with eTP:Local       | 10.0.0.2    | 192.168.0.2:3002 | 10.180.0.2:80, 10.180.1.2:80 | false
  pod to LB with eTP:Local             | 10.0.0.2    | 5.6.7.8:80       | 10.180.0.2:80, 10.180.1.2:80 | false
  node to ClusterIP with eTP:Local     | 192.168.0.2 | 172.30.0.42:80   | 10.180.0.2:80, 10.180.1.2:80 | true
  # upstream's row uses port 3001 (svc1's NodePort) here
  node to NodePort with eTP:Local      | 192.168.0.2 | 192.168.0.2:3001 | 10.180.0.1:80, 10.180.1.1:80 | true
  node to LB with eTP:Local            | 192.168.0.2 | 5.6.7.8:80       | 10.180.0.2:80, 10.180.1.2:80 | true
  external to ClusterIP with eTP:Local | 203.0.113.2 | 172.30.0.42:80   | 10.180.0.2:80, 10.180.1.2:80 | true
  external to NodePort with eTP:Local  | 203.0.113.2 | 192.168.0.2:3002 | 10.180.0.2:80                | false
  external to LB with eTP:Local        | 203.0.113.2 | 5.6.7.8:80       | 10.180.0.2:80                | false
  pod to ClusterIP with iTP:Local      | 10.0.0.2    | 172.30.0.43:80   | 10.180.0.3:80                | false
  pod to NodePort with iTP:Local       | 10.0.0.2    | 192.168.0.2:3003 | 10.180.0.3:80, 10.180.1.3:80 | true
  pod to LB with iTP:Local             | 10.0.0.2    | 9.10.11.12:80    | 10.180.0.3:80, 10.180.1.3:80 | true
  node to ClusterIP with iTP:Local     | 192.168.0.2 | 172.30.0.43:80   | 10.180.0.3:80                | true
  node to NodePort with iTP:Local      | 192.168.0.2 | 192.168.0.2:3003 | 10.180.0.3:80, 10.180.1.3:80 | true
  node to LB with iTP:Local            | 192.168.0.2 | 9.10.11.12:80    | 10.180.0.3:80, 10.180.1.3:80 | true
  external to ClusterIP with iTP:Local | 203.0.113.2 | 172.30.0.43:80   | 10.180.0.3:80                | true
  external to NodePort with iTP:Local  | 203.0.113.2 | 192.168.0.2:3003 | 10.180.0.3:80, 10.180.1.3:80 | true
  external to LB with iTP:Local        | 203.0.113.2 | 9.10.11.12:80    | 10.180.0.3:80, 10.180.1.3:80 | true
`);

interface Overrides {
  readonly masq?: Readonly<Record<string, boolean>>;
  readonly output?: Readonly<Record<string, string>>;
}

/** The base rows with one set-up's overrides; an override naming no row is a transcription error. */
function withOverrides(o: Overrides): Flow[] {
  const names = new Set(BASE.map((f) => f.name));
  for (const name of [...Object.keys(o.masq ?? {}), ...Object.keys(o.output ?? {})])
    if (!names.has(name)) throw new Error(`override of unknown row "${name}"`);
  return BASE.map((f) => ({
    ...f,
    masq: o.masq?.[f.name] ?? f.masq,
    output: o.output?.[f.name] ?? f.output,
  }));
}

const POD_TO_CLUSTER_IP_MASQUERADED = {
  "pod to ClusterIP": true,
  "pod to ClusterIP with eTP:Local": true,
  "pod to ClusterIP with iTP:Local": true,
};
const POD_TO_EXTERNAL_ETP_LOCAL_NOT_SHORT_CIRCUITED = {
  "pod to NodePort with eTP:Local": "10.180.0.2:80",
  "pod to LB with eTP:Local": "10.180.0.2:80",
};

const CASES: { name: string; setup: FakeProxierOptions; overrides: Overrides }[] = [
  { name: "base", setup: {}, overrides: {} },
  {
    name: "no LocalTrafficDetector",
    setup: { noLocalDetector: true },
    overrides: {
      masq: {
        "node to ClusterIP": false,
        "node to ClusterIP with eTP:Local": false,
        "node to ClusterIP with iTP:Local": false,
        "external to ClusterIP": false,
        "external to ClusterIP with eTP:Local": false,
        "external to ClusterIP with iTP:Local": false,
      },
      output: POD_TO_EXTERNAL_ETP_LOCAL_NOT_SHORT_CIRCUITED,
    },
  },
  {
    name: "masqueradeAll",
    setup: { masqueradeAll: true },
    overrides: { masq: POD_TO_CLUSTER_IP_MASQUERADED },
  },
  {
    name: "masqueradeAll, no LocalTrafficDetector",
    setup: { masqueradeAll: true, noLocalDetector: true },
    overrides: { masq: POD_TO_CLUSTER_IP_MASQUERADED, output: POD_TO_EXTERNAL_ETP_LOCAL_NOT_SHORT_CIRCUITED },
  },
];

describe("upstream TestInternalExternalMasquerade", () => {
  for (const c of CASES) {
    describe(c.name, () => {
      let table: FakeNftTable | undefined;
      beforeAll(async () => {
        const s = newFakeProxier("IPv4", c.setup);
        s.cluster.apply(...objects());
        await s.sync();
        table = tableSnapshot(s, "IPv4");
      });
      traceFlows(() => table!, "IPv4", TRACER_NODE_IPS, withOverrides(c.overrides));
    });
  }
});

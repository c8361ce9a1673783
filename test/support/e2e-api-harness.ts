// The e2e-harness.ts shape for suites that feed the real binary from the fake API server instead
// of a --state file: one topology (pods with echo servers, optionally the client namespace), the
// fake API server reached from the node namespace (e2e-apiserver.ts), the Node and the suite's
// Services loaded into it, and dist/kube-proxy-ts started in the mode the suite names. Also
// /metrics scraped from the node namespace, and the node's conntrack table read and written with
// conntrack-tools there (for the reconciler's tests).

import { tempDir } from "./binary.ts";
import { loadCluster, type NodeApi, startNodeApi } from "./e2e-apiserver.ts";
import { type NodeSpec, type ServiceSpec, serviceObject, sliceObject } from "./e2e-cluster.ts";
import { type Harness, tearDownHarness } from "./e2e-harness.ts";
import { describeHttp, httpGet, parseMetrics, type Scrape } from "./e2e-http.ts";
import { type E2eProxyMode, NODE_NAME, startKubeProxy } from "./e2e-kubeproxy.ts";
import { probe, type ServerOptions, startServer } from "./e2e-traffic.ts";
import type { FakeKind, KObject } from "./fake-apiserver.ts";
import { createTopology, type PodSpec } from "./netns.ts";

/** The metrics address kubeProxyArgv binds, as seen from the node namespace. */
export const NODE_METRICS_URL = "http://127.0.0.1:10249";

export interface ApiHarness extends Harness {
  api?: NodeApi;
}

export interface ApiRunSpec {
  readonly node: NodeSpec;
  readonly pods: readonly PodSpec[];
  /** Echo servers started in every pod (default: TCP 8080). */
  readonly servers?: ServerOptions;
  /** Create the client namespace (default false). */
  readonly client?: boolean;
  readonly services: readonly ServiceSpec[];
  /** More API objects, created after the Node and the Services (e.g. slices with hints). */
  readonly objects?: readonly { readonly kind: FakeKind; readonly obj: KObject }[];
  readonly mode?: E2eProxyMode;
  readonly extraArgs?: readonly string[];
  /** Extra environment for the binary. */
  readonly env?: Record<string, string>;
}

/**
 * Builds the topology and the API server (loaded with the Node and `spec.services`), starts the
 * binary against it, and waits (bounded) until it logs that its first sync is done.
 */
export async function setUpApiRun(h: ApiHarness, spec: ApiRunSpec): Promise<void> {
  h.topo = await createTopology({ pods: spec.pods, client: spec.client ?? false });
  const servers = spec.servers ?? { tcp: [8080] };
  await Promise.all(spec.pods.map((p) => startServer(h.topo!, p.name, servers)));
  h.dir = tempDir("kpts-e2e-api-");
  h.api = await startNodeApi(h.topo, h.dir);
  loadCluster(h.api.server, spec.node, spec.services);
  for (const o of spec.objects ?? []) h.api.server.create(o.kind, o.obj);
  h.kubeProxy = startKubeProxy(h.topo, {
    kubeconfig: h.api.kubeconfig,
    nodeName: spec.node.name,
    ...(spec.mode ? { mode: spec.mode } : {}),
    extraArgs: spec.extraArgs ?? [],
    ...(spec.env ? { env: spec.env } : {}),
  });
  // waitForOutput stretches its limit by timeScale() itself.
  await h.kubeProxy.waitForOutput(/Memory after the first sync/, 30_000);
}

/** Stops the binary, the API server and its forwarder, and deletes the topology. */
export async function tearDownApiRun(h: ApiHarness): Promise<void> {
  await h.kubeProxy?.kill(3000);
  try {
    await h.api?.close();
  } finally {
    await tearDownHarness(h);
  }
}

/** A Service with one HTTP port (80 -> 8080) whose one endpoint is `podIP`. */
export function httpService(name: string, clusterIP: string, podIP: string): ServiceSpec {
  return {
    name,
    clusterIP,
    ports: [{ name: "http", port: 80, targetPort: 8080 }],
    endpoints: [{ ip: podIP }],
  };
}

/** Creates `s` in the API server: the Service, and its EndpointSlice on this node. */
export function createService(h: ApiHarness, s: ServiceSpec): void {
  h.api!.server.create("Service", serviceObject(s) as KObject);
  const slice = sliceObject(s, NODE_NAME);
  if (slice) h.api!.server.create("EndpointSlice", slice as KObject);
}

/**
 * Polls `s`'s ClusterIP on port 80 from the client namespace until it answers; the ms waited.
 * Throws at the deadline.
 */
export async function waitForAnswer(h: ApiHarness, s: ServiceSpec, limitMs: number): Promise<number> {
  const start = Date.now();
  const deadline = start + limitMs;
  for (let i = 0; i < 10_000 && Date.now() < deadline; i++) {
    const r = await probe(h.topo!, "client", { target: `${s.clusterIP}:80`, count: 1, timeoutMs: 1000 });
    if (r.ok) return Date.now() - start;
  }
  throw new Error(`${s.name} (${s.clusterIP}) did not answer within ${limitMs} ms`);
}

/** One GET of /metrics from the node namespace, parsed. */
export async function scrapeNode(h: Harness): Promise<Scrape> {
  const r = await httpGet(h.topo!, "node", `${NODE_METRICS_URL}/metrics`);
  if (!r.ok || r.status !== 200) throw new Error(`GET /metrics: ${describeHttp(r)}`);
  return parseMetrics(r.body ?? "");
}

// ---- conntrack in the node namespace --------------------------------------------------------

/** One UDP flow as conntrack -I takes it: the original tuple and the reply's source. */
export interface UdpFlow {
  readonly src: string;
  readonly sport: number;
  readonly dst: string;
  readonly dport: number;
  /** Where the reply comes from: the endpoint the flow was DNATed to. */
  readonly replySrc: string;
  readonly replySport: number;
}

/** Inserts `flow` into the node's conntrack table (UDP, 120 s timeout); throws if refused. */
export async function insertUdpFlow(h: Harness, flow: UdpFlow): Promise<void> {
  await h.topo!.must(
    "node",
    [
      "conntrack",
      "-I",
      "-p",
      "udp",
      "-s",
      flow.src,
      "-d",
      flow.dst,
      "--sport",
      String(flow.sport),
      "--dport",
      String(flow.dport),
      "-r",
      flow.replySrc,
      "-q",
      flow.src,
      "--reply-port-src",
      String(flow.replySport),
      "--reply-port-dst",
      String(flow.sport),
      "-t",
      "120",
    ],
    { timeoutMs: 10_000 },
  );
}

/** The node's IPv4 UDP conntrack listing (conntrack -L), one flow a line. */
export async function listUdpFlows(h: Harness): Promise<string[]> {
  const r = await h.topo!.run("node", ["conntrack", "-L", "-f", "ipv4", "-p", "udp"], { timeoutMs: 10_000 });
  if (r.code !== 0) throw new Error(`conntrack -L in the node namespace: exit ${r.code}: ${r.stderr}`);
  return r.stdout.split("\n").filter((l) => l.startsWith("udp"));
}

/** Whether a listed flow line is `flow` (its original tuple and its reply source). */
export function isFlow(line: string, flow: UdpFlow): boolean {
  const orig = `src=${flow.src} dst=${flow.dst} sport=${flow.sport} dport=${flow.dport}`;
  const reply = `src=${flow.replySrc} dst=${flow.src} sport=${flow.replySport} dport=${flow.sport}`;
  return line.includes(orig) && line.includes(reply);
}

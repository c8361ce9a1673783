// The fake API server (fake-apiserver.ts) made reachable from a topology's node namespace, so
// the real binary can list and watch it there: the server also listens on a Unix socket in the
// test's temporary directory, and a forwarder (e2e-unix-forward.ts) inside the node namespace
// accepts TCP on 127.0.0.1:<port> and joins each connection to that socket. Nothing is added to
// the root namespace's network. Also: the e2e-cluster.ts specs as API objects.

import { join } from "node:path";
import { type NodeSpec, nodeObject, type ServiceSpec, serviceObject, sliceObject } from "./e2e-cluster.ts";
import { FakeApiServer, type KObject, kubeconfigFor } from "./fake-apiserver.ts";
import type { Daemon, Topology } from "./netns.ts";

const FORWARDER = join(import.meta.dir, "e2e-unix-forward.ts");
/** Where the API server appears inside the node namespace. */
export const NODE_API_ADDRESS = "127.0.0.1:6443";

export interface NodeApi {
  readonly server: FakeApiServer;
  /** A kubeconfig naming http://127.0.0.1:6443, valid inside the node namespace. */
  readonly kubeconfig: string;
  readonly forwarder: Daemon;
  close(): Promise<void>;
}

/** Starts a fake API server and its forwarder in `topo`'s node namespace; files go in `dir`. */
export async function startNodeApi(topo: Topology, dir: string): Promise<NodeApi> {
  const server = await FakeApiServer.start({ socketPath: join(dir, "api.sock") });
  try {
    const forwarder = topo.spawnDaemon("node", [
      process.execPath,
      FORWARDER,
      "--listen",
      NODE_API_ADDRESS,
      "--socket",
      join(dir, "api.sock"),
      "--max-seconds",
      "600",
    ]);
    await forwarder.waitForOutput(/^READY /m, 15_000);
    const kubeconfig = kubeconfigFor({ url: `http://${NODE_API_ADDRESS}` }, { dir });
    return {
      server,
      kubeconfig,
      forwarder,
      async close() {
        await forwarder.kill(1000);
        await server.close();
      },
    };
  } catch (err) {
    await server.close();
    throw err;
  }
}

/** The API objects of a Service spec: the Service and, when it has endpoints, its EndpointSlice. */
export function serviceObjects(s: ServiceSpec, nodeName: string): { service: KObject; slice?: KObject } {
  const slice = sliceObject(s, nodeName) as KObject | undefined;
  return { service: serviceObject(s) as KObject, ...(slice ? { slice } : {}) };
}

/** Counts what a test sent, to compare with the change counters the proxy reports. */
export interface SentChanges {
  services: number;
  slices: number;
}

/** Creates the Node and every Service (with its slice); returns how many of each were sent. */
export function loadCluster(
  server: FakeApiServer,
  node: NodeSpec,
  services: readonly ServiceSpec[],
): SentChanges {
  server.create("Node", nodeObject(node) as KObject);
  const sent: SentChanges = { services: 0, slices: 0 };
  for (const s of services) {
    const { service, slice } = serviceObjects(s, node.name);
    server.create("Service", service);
    sent.services++;
    if (slice) {
      server.create("EndpointSlice", slice);
      sent.slices++;
    }
  }
  return sent;
}

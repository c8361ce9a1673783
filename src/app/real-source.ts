// Where a real run reads the cluster: a --state file (re-read when it changes) or the API
// server. With the API server come an event recorder and the birth cry on this Node; lists,
// watches, event posts and the Node lookup all share one client and its observer.

import type { RunOptions } from "../cli/types.ts";
import type { ProxyConfig } from "../config/types.ts";
import { type ApiRequestObserver, kubeApiClient } from "../k8s/api-client.ts";
import { createApiRecorder } from "../k8s/api-recorder.ts";
import { type EventRecorder, nullRecorder } from "../k8s/events.ts";
import { createApiSource } from "../k8s/informers.ts";
import { loadKubeConfig } from "../k8s/kubeconfig.ts";
import type { ClusterSource } from "../k8s/source.ts";
import { createStateFileSource } from "../k8s/state-file-source.ts";
import type { Logger } from "../log/logger.ts";
import { tokenBucket } from "../util/token-bucket.ts";
import { nodeIPsFromApi, nodeIPsFromStateFile } from "./node-ips.ts";

/** How long startup waits for this Node's addresses from the API server. */
const NODE_IP_TIMEOUT_MS = 30_000;

export interface RealSource {
  readonly source: ClusterSource;
  readonly recorder: EventRecorder;
  readonly description: string;
  /** Posts the "Starting" event on the Node where the source is an API server. */
  birthCry(): Promise<void>;
  /** This node's IPs as the source knows them (the Node object's addresses, primary first). */
  lookupNodeIPs(): Promise<string[]>;
}

export function openRealSource(
  config: ProxyConfig,
  opts: RunOptions,
  nodeName: string,
  log: Logger,
  /** Told about every API request (rest_client_* metrics). */
  observer?: ApiRequestObserver,
): RealSource | { error: string } {
  const stateFile = opts.stateFiles?.[0];
  if (stateFile) {
    return {
      source: createStateFileSource({ path: stateFile, nodeName, logger: log.named("state") }),
      recorder: nullRecorder,
      description: `state file ${stateFile}`,
      birthCry: async () => {},
      lookupNodeIPs: async () => nodeIPsFromStateFile(stateFile, nodeName),
    };
  }
  const kube = loadKubeConfig({
    kubeconfigPath: config.clientConnection.kubeconfig || undefined,
    master: opts.master,
    env: process.env,
  });
  if (!kube.ok) return { error: kube.error.message };
  // One client-side rate limit shared by watches and events, as upstream's --kube-api-qps/burst.
  const { qps, burst } = config.clientConnection;
  const client = kubeApiClient(kube.kubeConfig, qps > 0 ? tokenBucket(qps, burst) : undefined, observer);
  const recorder = createApiRecorder({ client, nodeName, logger: log.named("events") });
  return {
    source: createApiSource({
      kubeConfig: kube.kubeConfig,
      nodeName,
      logger: log,
      client,
      resyncPeriodMs: config.configSyncPeriod,
    }),
    recorder,
    description: `API server ${kube.server} (${kube.source})`,
    birthCry: async () => {
      await recorder.postBirthCry(nodeName);
    },
    lookupNodeIPs: () => nodeIPsFromApi(client, nodeName, NODE_IP_TIMEOUT_MS),
  };
}

// Where kube-proxy finds its API server: --kubeconfig, else $KUBECONFIG, else the in-cluster
// service account; --master replaces the server URL of whatever was loaded (upstream's
// ConfigOverrides.ClusterInfo.Server), and with nothing else it is the whole configuration.

import { existsSync, readFileSync } from "node:fs";
import { delimiter, dirname, resolve } from "node:path";
import { type Cluster, KubeConfig } from "@kubernetes/client-node";
import { parse as parseYaml } from "yaml";
import { errText } from "../util/err-text.ts";
import { joinHostPort } from "../util/net/host-port.ts";

/** Where the pod's service account is mounted (rest.InClusterConfig reads the same files). */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

export interface LoadKubeConfigOptions {
  /** --kubeconfig / clientConnection.kubeconfig. */
  kubeconfigPath?: string;
  /** --master. */
  master?: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Tests point this at a fake service account directory. */
  serviceAccountDir?: string;
}

export type KubeConfigSource = "kubeconfig" | "KUBECONFIG" | "master" | "in-cluster";

export type LoadKubeConfigResult =
  | { ok: true; kubeConfig: KubeConfig; source: KubeConfigSource; server: string }
  | { ok: false; error: KubeConfigError };

/** No usable API server configuration; `tried` lists each place looked at and why it failed. */
export class KubeConfigError extends Error {
  constructor(readonly tried: readonly string[]) {
    super(`no usable API server configuration: ${tried.join("; ")}`);
    this.name = "KubeConfigError";
  }
}

function message(err: unknown): string {
  return errText(err);
}

/**
 * client-go's `user.tokenFile` (what kubeadm's kube-proxy kubeconfig uses for the pod's
 * ServiceAccount token), which the client library ignores: it knows only kubectl's
 * `token-file`, read once. Mapped to the library's tokenFile provider, which re-reads the file
 * as the kubelet rotates the token. An explicit token wins, as in client-go.
 */
function honourTokenFile(kc: KubeConfig, text: string, dir: string): void {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch {
    return; // loadFromFile already accepted it; nothing more to learn here.
  }
  const users = (raw as { users?: unknown } | null)?.users;
  if (!Array.isArray(users)) return;
  const tokenFiles = new Map<string, string>();
  for (const u of users as { name?: unknown; user?: { tokenFile?: unknown; token?: unknown } }[]) {
    const file = u?.user?.tokenFile;
    if (typeof u?.name === "string" && typeof file === "string" && file && !u.user?.token)
      // Relative to the kubeconfig's directory, as client-go resolves it.
      tokenFiles.set(u.name, resolve(dir, file));
  }
  kc.users = kc.users.map((u) => {
    const tokenFile = tokenFiles.get(u.name);
    return tokenFile && !u.token && !u.authProvider
      ? { ...u, authProvider: { name: "tokenFile", config: { tokenFile } } }
      : u;
  });
}

function loadFile(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  honourTokenFile(kc, readFileSync(path, "utf8"), dirname(path));
  return kc;
}

function fromFiles(paths: readonly string[]): KubeConfig {
  const kc = loadFile(paths[0]!);
  for (const p of paths.slice(1)) {
    const more = loadFile(p);
    // Like client-go, the first file to set the current context wins.
    kc.mergeConfig(more, true);
  }
  return kc;
}

function inCluster(env: LoadKubeConfigOptions["env"], dir: string): KubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) throw new Error("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined");
  const tokenFile = `${dir}/token`;
  if (!existsSync(tokenFile)) throw new Error(`no service account token at ${tokenFile}`);
  const caFile = `${dir}/ca.crt`;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: "inCluster",
        server: `https://${joinHostPort(host, port)}`,
        skipTLSVerify: false,
        ...(existsSync(caFile) ? { caFile } : {}),
      },
    ],
    // The library re-reads a tokenFile provider when the projected token rotates.
    users: [{ name: "inClusterUser", authProvider: { name: "tokenFile", config: { tokenFile } } }],
    contexts: [{ name: "inClusterContext", cluster: "inCluster", user: "inClusterUser" }],
    currentContext: "inClusterContext",
  });
  return kc;
}

function masterOnly(master: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "master", server: master, skipTLSVerify: false }],
    users: [{ name: "anonymous" }],
    contexts: [{ name: "master", cluster: "master", user: "anonymous" }],
    currentContext: "master",
  });
  return kc;
}

/**
 * Rewrites the current cluster: --master's URL if given, and plain-http servers marked as not
 * verifying TLS, because the client library refuses http:// otherwise (client-go does not).
 */
function finish(kc: KubeConfig, master: string | undefined): string {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("the current context names no cluster");
  const server = master || cluster.server;
  if (!server) throw new Error(`cluster ${JSON.stringify(cluster.name)} has no server`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new Error(`server ${JSON.stringify(server)} is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`server ${JSON.stringify(server)} is not http or https`);
  }
  const updated: Cluster = {
    ...cluster,
    server,
    ...(url.protocol === "http:" ? { skipTLSVerify: true } : {}),
  };
  kc.clusters = kc.clusters.map((c) => (c.name === cluster.name ? updated : c));
  return server;
}

export function loadKubeConfig(opts: LoadKubeConfigOptions): LoadKubeConfigResult {
  const tried: string[] = [];
  const attempt = (source: KubeConfigSource, what: string, load: () => KubeConfig): LoadKubeConfigResult => {
    try {
      const kubeConfig = load();
      const server = finish(kubeConfig, opts.master);
      return { ok: true, kubeConfig, source, server };
    } catch (err) {
      tried.push(`${what}: ${message(err)}`);
      return { ok: false, error: new KubeConfigError(tried) };
    }
  };

  if (opts.kubeconfigPath) {
    const path = opts.kubeconfigPath;
    return attempt("kubeconfig", `--kubeconfig ${path}`, () => fromFiles([path]));
  }
  tried.push("--kubeconfig not set");

  const envList = (opts.env.KUBECONFIG ?? "").split(delimiter).filter((p) => p !== "");
  if (envList.length) {
    const existing = envList.filter((p) => existsSync(p));
    if (existing.length)
      return attempt("KUBECONFIG", `KUBECONFIG=${opts.env.KUBECONFIG}`, () => fromFiles(existing));
    tried.push(`KUBECONFIG=${opts.env.KUBECONFIG}: no such file`);
  } else tried.push("KUBECONFIG not set");

  // Upstream: with --master alone, the master URL (no credentials) is the configuration.
  if (opts.master) {
    const master = opts.master;
    return attempt("master", `--master ${master}`, () => masterOnly(master));
  }
  return attempt("in-cluster", "in-cluster config", () =>
    inCluster(opts.env, opts.serviceAccountDir ?? SERVICE_ACCOUNT_DIR),
  );
}

import { describe, expect, setSystemTime, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { HttpMethod, RequestContext } from "@kubernetes/client-node";
import { KubeConfigError, loadKubeConfig } from "../../src/k8s/kubeconfig.ts";
import { tempDir } from "../support/binary.ts";
import { kubeconfigFor } from "../support/fake-apiserver.ts";

function ok(r: ReturnType<typeof loadKubeConfig>) {
  if (!r.ok) throw r.error;
  return r;
}

function fail(r: ReturnType<typeof loadKubeConfig>): KubeConfigError {
  if (r.ok) throw new Error(`expected a failure, loaded ${r.source}`);
  return r.error;
}

function serviceAccount(token = "sa-token"): string {
  const dir = tempDir("kpts-sa-");
  writeFileSync(join(dir, "token"), token);
  return dir;
}

describe("loadKubeConfig", () => {
  test("--kubeconfig wins; an http server is accepted (the library alone would refuse it)", () => {
    const path = kubeconfigFor({ url: "http://127.0.0.1:6443" });
    const r = ok(loadKubeConfig({ kubeconfigPath: path, env: { KUBECONFIG: "/nonexistent" } }));
    expect(r.source).toBe("kubeconfig");
    expect(r.server).toBe("http://127.0.0.1:6443");
    expect(r.kubeConfig.getCurrentCluster()?.skipTLSVerify).toBe(true);
  });

  test("--master replaces the kubeconfig's server URL", () => {
    const path = kubeconfigFor({ url: "https://old.example:6443" }, { token: "abc" });
    const r = ok(loadKubeConfig({ kubeconfigPath: path, master: "https://new.example:443", env: {} }));
    expect(r.server).toBe("https://new.example:443");
    expect(r.kubeConfig.getCurrentCluster()?.server).toBe("https://new.example:443");
    expect(r.kubeConfig.getCurrentCluster()?.skipTLSVerify).toBe(false);
    expect(r.kubeConfig.getCurrentUser()?.token).toBe("abc");
  });

  test("a missing --kubeconfig is an error naming the file, without falling back", () => {
    const err = fail(
      loadKubeConfig({
        kubeconfigPath: "/nonexistent/kubeconfig",
        env: { KUBERNETES_SERVICE_HOST: "203.0.113.1" },
      }),
    );
    expect(err).toBeInstanceOf(KubeConfigError);
    expect(err.tried).toHaveLength(1);
    expect(err.message).toContain("/nonexistent/kubeconfig");
  });

  test("KUBECONFIG is used when --kubeconfig is not; missing entries in the list are skipped", () => {
    const path = kubeconfigFor({ url: "http://127.0.0.1:1234" });
    const r = ok(loadKubeConfig({ env: { KUBECONFIG: `/nonexistent:${path}` } }));
    expect(r.source).toBe("KUBECONFIG");
    expect(r.server).toBe("http://127.0.0.1:1234");
  });

  test("--master alone is a complete configuration", () => {
    const r = ok(loadKubeConfig({ master: "http://127.0.0.1:8080", env: {} }));
    expect(r.source).toBe("master");
    expect(r.server).toBe("http://127.0.0.1:8080");
  });

  test("in-cluster: service host and port from the environment, the token as a Bearer header", async () => {
    const dir = serviceAccount("sa-token");
    const r = ok(
      loadKubeConfig({
        env: { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" },
        serviceAccountDir: dir,
      }),
    );
    expect(r.source).toBe("in-cluster");
    expect(r.server).toBe("https://[fd00::1]:443");
    const ctx = new RequestContext(`${r.server}/api`, HttpMethod.GET);
    await r.kubeConfig.applySecurityAuthentication(ctx);
    expect(ctx.getHeaders().Authorization).toBe("Bearer sa-token");
  });

  test("nothing configured: the error says everything that was tried", () => {
    const err = fail(
      loadKubeConfig({ env: { KUBECONFIG: "/nonexistent" }, serviceAccountDir: serviceAccount() }),
    );
    expect(err.tried).toEqual([
      "--kubeconfig not set",
      "KUBECONFIG=/nonexistent: no such file",
      "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined",
    ]);
  });

  test("in-cluster without a token file is an error", () => {
    const dir = tempDir("kpts-sa-empty-");
    const err = fail(
      loadKubeConfig({
        env: { KUBERNETES_SERVICE_HOST: "203.0.113.1", KUBERNETES_SERVICE_PORT: "443" },
        serviceAccountDir: dir,
      }),
    );
    expect(err.message).toContain("no service account token");
  });

  test("client-go's user.tokenFile (kubeadm's kube-proxy kubeconfig) is sent and re-read when it rotates", async () => {
    const dir = serviceAccount("first-token");
    const path = join(dir, "kubeconfig");
    // A relative tokenFile is relative to the kubeconfig's directory.
    writeFileSync(
      path,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters: [{name: c, cluster: {server: 'https://api.example:6443'}}]",
        "users: [{name: u, user: {tokenFile: token}}]",
        "contexts: [{name: x, context: {cluster: c, user: u}}]",
        "current-context: x",
      ].join("\n"),
    );
    const r = ok(loadKubeConfig({ kubeconfigPath: path, env: {} }));
    const header = async () => {
      const ctx = new RequestContext(`${r.server}/api`, HttpMethod.GET);
      await r.kubeConfig.applySecurityAuthentication(ctx);
      return ctx.getHeaders().Authorization;
    };
    expect(await header()).toBe("Bearer first-token");
    writeFileSync(join(dir, "token"), "second-token");
    // The library's tokenFile provider re-reads the file once its copy is a minute old.
    setSystemTime(new Date(Date.now() + 61_000));
    try {
      expect(await header()).toBe("Bearer second-token");
    } finally {
      setSystemTime();
    }
  });

  test("a server that is not an http(s) URL is rejected", () => {
    const err = fail(loadKubeConfig({ master: "ftp://example", env: {} }));
    expect(err.message).toContain("is not http or https");
  });
});

// deploy/kube-proxy-ts.yaml: every object is valid against the Kubernetes API schema, the
// DaemonSet has the shape a kubeadm cluster gives kube-proxy, its command line and the
// ConfigMap's KubeProxyConfiguration are accepted by the binary's own parser and loader, and
// the ClusterRole grants exactly src/k8s/api-access.ts (binary-rbac.test.ts checks that list
// against the requests the real binary makes).
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HttpMethod, RequestContext } from "@kubernetes/client-node";
// The client library's generated models (from the same OpenAPI spec): a round trip through them
// drops any field the API does not define, which kubernetes-models' validators let through.
import { ObjectSerializer } from "@kubernetes/client-node/dist/gen/models/ObjectSerializer.js";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { ClusterRole } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole";
import { ClusterRoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { findFlag } from "../../src/cli/flags.ts";
import { resolveCommandLine } from "../../src/cli/index.ts";
import { loadConfig } from "../../src/config/load.ts";
import { API_ACCESS } from "../../src/k8s/api-access.ts";
import { loadKubeConfig } from "../../src/k8s/kubeconfig.ts";
import { tempDir } from "../support/binary.ts";
import { type K8sObject, only, rbacRules, readManifest } from "./manifests.ts";

const MODELS: Record<string, { model: new (o: never) => { validate(): void }; serializerType: string }> = {
  "v1/ServiceAccount": { model: ServiceAccount, serializerType: "V1ServiceAccount" },
  "v1/ConfigMap": { model: ConfigMap, serializerType: "V1ConfigMap" },
  "apps/v1/DaemonSet": { model: DaemonSet, serializerType: "V1DaemonSet" },
  "rbac.authorization.k8s.io/v1/ClusterRole": { model: ClusterRole, serializerType: "V1ClusterRole" },
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": {
    model: ClusterRoleBinding,
    serializerType: "V1ClusterRoleBinding",
  },
};

const objects = readManifest();
const daemonSet = only(objects, "DaemonSet");
const configMap = only(objects, "ConfigMap");
const podSpec = daemonSet.spec.template.spec;
const container = podSpec.containers[0];

/** Where each ConfigMap key appears inside the container. */
function configMapFiles(): Map<string, string> {
  const volume = podSpec.volumes.find((v: K8sObject) => v.configMap?.name === configMap.metadata.name);
  const mount = container.volumeMounts.find((m: K8sObject) => m.name === volume?.name);
  if (!mount) throw new Error("the ConfigMap is not mounted");
  return new Map(
    Object.entries(configMap.data as Record<string, string>).map(([k, v]) => [`${mount.mountPath}/${k}`, v]),
  );
}

/** The container's argv after the program, with $(VAR) from the env expanded as the kubelet does. */
function containerArgs(nodeName: string): string[] {
  const env = new Map<string, string>(
    container.env.map((e: K8sObject) => [
      e.name,
      e.valueFrom?.fieldRef?.fieldPath === "spec.nodeName" ? nodeName : e.value,
    ]),
  );
  return [...container.command.slice(1), ...(container.args ?? [])].map((a: string) =>
    a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name) => env.get(name) ?? whole),
  );
}

/** `o` as the generated model sees it: only the fields the API defines survive. */
function roundTrip(o: K8sObject, type: string): unknown {
  const typed = ObjectSerializer.deserialize(o, type, "");
  return JSON.parse(JSON.stringify(ObjectSerializer.serialize(typed, type, "")));
}

describe("deploy/kube-proxy-ts.yaml", () => {
  test("every object is valid against the Kubernetes schema and has no field the API lacks", () => {
    expect(objects.map((o) => o.kind).sort()).toEqual([
      "ClusterRole",
      "ClusterRoleBinding",
      "ConfigMap",
      "DaemonSet",
      "ServiceAccount",
    ]);
    for (const o of objects) {
      const entry = MODELS[`${o.apiVersion}/${o.kind}`];
      if (!entry) throw new Error(`no schema for ${o.apiVersion} ${o.kind}`);
      expect(() => new entry.model(o as never).validate()).not.toThrow();
      expect(roundTrip(o, entry.serializerType)).toEqual(o);
    }
  });

  test("the schema check does catch a misspelt field", () => {
    const bad = structuredClone(daemonSet);
    bad.spec.template.spec.hostNetwrok = true;
    expect(roundTrip(bad, "V1DaemonSet")).not.toEqual(bad);
    const wrongType = structuredClone(daemonSet);
    wrongType.spec.template.spec.containers[0].image = 1;
    expect(() => new DaemonSet(wrongType as never).validate()).toThrow();
  });

  test("the DaemonSet runs like kubeadm's kube-proxy", () => {
    expect(daemonSet.metadata.namespace).toBe("kube-system");
    expect(podSpec.hostNetwork).toBe(true);
    expect(podSpec.priorityClassName).toBe("system-node-critical");
    expect(podSpec.tolerations).toEqual([{ operator: "Exists" }]);
    expect(podSpec.serviceAccountName).toBe(only(objects, "ServiceAccount").metadata.name);
    expect(container.securityContext).toEqual({ privileged: true });
    expect(container.command[0]).toBe("/usr/local/bin/kube-proxy");
    const version = JSON.parse(
      readFileSync(join(import.meta.dir, "..", "..", "package.json"), "utf8"),
    ).version;
    expect(container.image).toBe(`kube-proxy-ts:${version}`);
    expect(container.env).toContainEqual({
      name: "NODE_NAME",
      valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } },
    });

    const hostPaths = Object.fromEntries(
      podSpec.volumes.filter((v: K8sObject) => v.hostPath).map((v: K8sObject) => [v.hostPath.path, v]),
    );
    expect(hostPaths["/run/xtables.lock"]?.hostPath.type).toBe("FileOrCreate");
    const mountOf = (volume: string) => container.volumeMounts.find((m: K8sObject) => m.name === volume);
    expect(mountOf(hostPaths["/run/xtables.lock"]?.name)?.mountPath).toBe("/run/xtables.lock");
    expect(mountOf(hostPaths["/run/xtables.lock"]?.name)?.readOnly).toBeFalsy();
    expect(mountOf(hostPaths["/lib/modules"]?.name)).toMatchObject({
      mountPath: "/lib/modules",
      readOnly: true,
    });
  });

  test("the liveness probe asks /livez on the healthz port the config serves", () => {
    const cmd = resolveCommandLine(containerArgs("node-a"), (p) => {
      const text = configMapFiles().get(p);
      if (text === undefined) throw new Error(`${p} is not in the ConfigMap`);
      return text;
    });
    if (cmd.kind !== "run") throw new Error(JSON.stringify(cmd));
    const port = Number(cmd.config.healthzBindAddress.split(":").pop());
    expect(container.livenessProbe.httpGet).toEqual({ path: "/livez", port });
    expect(port).toBe(10256);
  });

  test("a memory request and no memory limit (the README sizes it; a low limit kills big syncs)", () => {
    expect(container.resources?.requests?.memory).toBe("128Mi");
    expect(container.resources?.limits?.memory).toBeUndefined();
  });

  test("the command line is flags the binary accepts, and with the ConfigMap it resolves cleanly", () => {
    const args = containerArgs("node-a");
    for (const a of args) {
      const name = /^--([^=]+)/.exec(a)?.[1];
      expect(name && findFlag(name)).toBeTruthy();
    }
    const files = configMapFiles();
    const cmd = resolveCommandLine(args, (p) => {
      const text = files.get(p);
      if (text === undefined) throw new Error(`${p} is not in the ConfigMap`);
      return text;
    });
    if (cmd.kind !== "run") throw new Error(`rejected: ${JSON.stringify(cmd)}`);
    expect(cmd.warnings).toEqual([]);
    expect(cmd.overrides).toEqual([]);
    expect(cmd.config.hostnameOverride).toBe("node-a");
    // The kubeconfig the config names is the ConfigMap's other key.
    expect(files.has(cmd.config.clientConnection.kubeconfig)).toBe(true);
  });

  test("config.conf loads with the project's config loader, no issues and no unknown fields", () => {
    const r = loadConfig({
      file: { name: "config.conf", text: configMap.data["config.conf"] },
      settings: [],
    });
    expect(r.issues).toEqual([]);
    expect(r.warnings).toEqual([]);
    expect(r.config?.mode).toBe("iptables");
  });

  test("kubeconfig.conf authenticates with the pod's ServiceAccount token", async () => {
    const dir = tempDir("kpts-deploy-");
    writeFileSync(join(dir, "token"), "sa-token");
    writeFileSync(join(dir, "ca.crt"), "");
    // The same kubeconfig with the ServiceAccount directory moved to the temporary one.
    const text = (configMap.data["kubeconfig.conf"] as string).replaceAll(
      "/var/run/secrets/kubernetes.io/serviceaccount",
      dir,
    );
    writeFileSync(join(dir, "kubeconfig.conf"), text);
    const r = loadKubeConfig({ kubeconfigPath: join(dir, "kubeconfig.conf"), env: {} });
    if (!r.ok) throw r.error;
    const ctx = new RequestContext(`${r.server}/api`, HttpMethod.GET);
    await r.kubeConfig.applySecurityAuthentication(ctx);
    expect(ctx.getHeaders().Authorization).toBe("Bearer sa-token");
    expect(r.kubeConfig.getCurrentCluster()?.caFile).toBe(join(dir, "ca.crt"));
  });

  test("the ClusterRole grants exactly src/k8s/api-access.ts, bound to the DaemonSet's ServiceAccount", () => {
    const role = only(objects, "ClusterRole");
    const wanted = API_ACCESS.map((a) => ({
      apiGroup: a.apiGroup,
      resource: a.resource,
      verbs: [...a.verbs].sort(),
    }));
    expect(rbacRules(role)).toEqual(
      rbacRules({
        ...role,
        rules: wanted.map((w) => ({ apiGroups: [w.apiGroup], resources: [w.resource], verbs: w.verbs })),
      }),
    );
    for (const rule of role.rules) {
      expect(rule.resourceNames).toBeUndefined();
      expect(rule.nonResourceURLs).toBeUndefined();
      for (const field of [rule.apiGroups, rule.resources, rule.verbs]) expect(field).not.toContain("*");
    }
    const binding = only(objects, "ClusterRoleBinding");
    expect(binding.roleRef).toEqual({
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: role.metadata.name,
    });
    const sa = only(objects, "ServiceAccount");
    expect(binding.subjects).toEqual([
      { kind: "ServiceAccount", name: sa.metadata.name, namespace: sa.metadata.namespace },
    ]);
  });
});

// dist/kube-proxy-ts and feature gates, as an operator meets them: an unknown or locked gate
// stops the start with exit 1 and names the gate; GA and deprecated settings warn; klog's removed
// flags are unknown flags; and the gates that change kube-proxy's behaviour change the plan.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary, tempDir } from "../support/binary.ts";

const dir = tempDir("kpts-gates-");

// node-a sits in zone-a. "dns" asks for trafficDistribution PreferSameNode and its slice carries
// the hints the EndpointSlice controller writes for it (node and zone); "lb" has an ingress IP in
// ipMode Proxy and an externalIP.
const STATE = `
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: { topology.kubernetes.io/zone: zone-a }
status:
  addresses: [{ type: InternalIP, address: 192.0.2.10 }]
---
apiVersion: v1
kind: Service
metadata: { name: dns, namespace: kube-system }
spec:
  clusterIP: 198.51.100.53
  clusterIPs: [198.51.100.53]
  trafficDistribution: PreferSameNode
  ports: [{ name: dns, port: 53, protocol: UDP }]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: dns-1
  namespace: kube-system
  labels: { kubernetes.io/service-name: dns }
addressType: IPv4
ports: [{ name: dns, port: 53, protocol: UDP }]
endpoints:
  - addresses: [203.0.113.20]
    conditions: { ready: true }
    nodeName: node-a
    zone: zone-a
    hints: { forZones: [{ name: zone-a }], forNodes: [{ name: node-a }] }
  - addresses: [203.0.113.21]
    conditions: { ready: true }
    nodeName: node-c
    zone: zone-a
    hints: { forZones: [{ name: zone-a }], forNodes: [{ name: node-c }] }
  - addresses: [203.0.113.80]
    conditions: { ready: true }
    nodeName: node-b
    zone: zone-b
    hints: { forZones: [{ name: zone-b }], forNodes: [{ name: node-b }] }
---
apiVersion: v1
kind: Service
metadata: { name: lb, namespace: default }
spec:
  type: LoadBalancer
  clusterIP: 198.51.100.30
  clusterIPs: [198.51.100.30]
  externalIPs: [192.0.2.150]
  ports: [{ name: http, port: 80, nodePort: 30080, protocol: TCP }]
status:
  loadBalancer:
    ingress:
      - { ip: 192.0.2.200, ipMode: VIP }
      - { ip: 192.0.2.201, ipMode: Proxy }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: lb-1
  namespace: default
  labels: { kubernetes.io/service-name: lb }
addressType: IPv4
ports: [{ name: http, port: 8080, protocol: TCP }]
endpoints:
  - addresses: [203.0.113.30]
    conditions: { ready: true }
    nodeName: node-a
`;
const stateFile = join(dir, "state.yaml");
writeFileSync(stateFile, STATE);

interface Report {
  commands: { argv: string[]; stdin?: string }[];
  services: { name: string; loadBalancerIPs?: string[] }[];
}

function plan(...extra: string[]): Report {
  const r = runBinary([
    "--dry-run",
    "--state",
    stateFile,
    "--hostname-override=node-a",
    "--output=json",
    ...extra,
  ]);
  if (r.code !== 0) throw new Error(`exit ${r.code}\n${r.stderr}`);
  return JSON.parse(r.stdout) as Report;
}

/** The endpoints the IPv4 restore sends `portName` to (its KUBE-SVC chain's jumps). */
function svcTargets(report: Report, portName: string): string[] {
  const restore = report.commands.find((c) => c.argv[0]?.match(/^iptables-(nft|legacy)-restore$/));
  const lines = (restore?.stdin ?? "").split("\n");
  const prefix = `-m comment --comment "${portName} -> `;
  return lines
    .filter((l) => l.startsWith("-A KUBE-SVC-") && l.includes(prefix))
    .map((l) => l.slice(l.indexOf(prefix) + prefix.length).split('"')[0] ?? "");
}

describe("feature gates on the command line and in the config file", () => {
  test("an unknown gate exits 1 naming it (flag)", () => {
    const r = runBinary(["--feature-gates=Bogus=true", "--dry-run", "--state", stateFile]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "featureGates.Bogus: true: unrecognized feature gate: Bogus (flag --feature-gates)",
    );
  });

  test("an unknown gate in the config file exits 1 naming the file line", () => {
    const config = join(dir, "config.yaml");
    writeFileSync(
      config,
      "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nfeatureGates:\n  NFTablesProxyMode: true\n  Bogus: false\n",
    );
    const r = runBinary(["--config", config, "--dry-run", "--state", stateFile]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`featureGates.Bogus: false: unrecognized feature gate: Bogus (${config}:5)`);
  });

  test.each([
    [
      "NFTablesProxyMode=false",
      "cannot set feature gate NFTablesProxyMode to false, feature is locked to true",
    ],
    ["PreferSameTrafficDistribution=false", "feature is locked to true"],
    ["TopologyAwareHints=false", "unrecognized feature gate: TopologyAwareHints"],
    ["ServiceTrafficDistribution=false", "unrecognized feature gate: ServiceTrafficDistribution"],
    ["LoadBalancerIPMode=false", "unrecognized feature gate: LoadBalancerIPMode"],
  ])("--feature-gates=%s exits 1 (locked since 1.33, or gone by 1.37)", (setting, message) => {
    const r = runBinary([`--feature-gates=${setting}`, "--dry-run", "--state", stateFile]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(message);
  });

  test("the 1.37 gates kube-proxy has are accepted", () => {
    for (const g of ["PreferSameTrafficDistribution=true", "ComponentStatusz=true", "ComponentFlagz=false"]) {
      expect(runBinary([`--feature-gates=${g}`, "--dry-run", "--state", stateFile]).code).toBe(0);
    }
  });

  test("an enabled gate whose dependency is off exits 1 (1.35+ dependency check)", () => {
    const r = runBinary(["--feature-gates=AllAlpha=true", "--dry-run", "--state", stateFile]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("is enabled, but depends on features that are disabled: [GenericWorkload]");
  });

  test("setting a GA or deprecated gate warns and runs", () => {
    const r = runBinary([
      "--feature-gates=NFTablesProxyMode=true,KubeProxyIPVS=true",
      "--dry-run",
      "--state",
      stateFile,
    ]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(
      /^W.*Setting GA feature gate NFTablesProxyMode=true\. It will be removed in a future release\./m,
    );
    expect(r.stderr).toMatch(/^W.*Setting deprecated feature gate KubeProxyIPVS=true\./m);
  });

  test("--proxy-mode=ipvs needs KubeProxyIPVS (1.37)", () => {
    const r = runBinary(["--proxy-mode=ipvs", "--feature-gates=KubeProxyIPVS=false", "--dry-run"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("needs the KubeProxyIPVS feature gate");
  });

  test.each([
    "--log-file=/tmp/kp.log",
    "--log-dir=/tmp",
    "--logtostderr=false",
    "--alsologtostderr",
    "--log-file-max-size=10",
    "--log-backtrace-at=a.go:1",
    "--one-output",
    "--skip-headers",
    "--skip-log-headers",
    "--stderrthreshold=1",
    "--add-dir-header",
  ])("klog's removed flag %s exits 1 as an unknown flag", (arg) => {
    const r = runBinary([arg, "--dry-run", "--state", stateFile]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${arg.split("=")[0]}`);
    expect(r.stderr).toContain("unknown flag");
  });
});

describe("what kube-proxy programs (--dry-run plan)", () => {
  test("PreferSameNode: the endpoint hinted for node-a only; a node unknown to the hints gets all", () => {
    expect(svcTargets(plan(), "kube-system/dns:dns")).toEqual(["203.0.113.20:53"]);
    // node-e has no Node object here, so no zone label either: no topology at all.
    expect(svcTargets(plan("--hostname-override=node-e"), "kube-system/dns:dns")).toEqual([
      "203.0.113.20:53",
      "203.0.113.21:53",
      "203.0.113.80:53",
    ]);
  });

  test("the ipMode Proxy ingress IP is never programmed (LoadBalancerIPMode GA since 1.32)", () => {
    const ips = (r: Report) => r.services.find((s) => s.name === "default/lb:http")?.loadBalancerIPs;
    const on = plan();
    expect(ips(on)).toEqual(["192.0.2.200"]);
    expect(restoreOf(on)).not.toContain("192.0.2.201");
  });

  test("AllowServiceExternalIPs: on by default; off, the externalIP is not programmed, the rest is", () => {
    expect(restoreOf(plan())).toContain("-d 192.0.2.150");
    const off = restoreOf(plan("--feature-gates=AllowServiceExternalIPs=false"));
    expect(off).not.toContain("192.0.2.150");
    expect(off).toContain("-d 192.0.2.200");
  });
});

function restoreOf(r: Report): string {
  return r.commands.find((c) => c.argv[0]?.match(/^iptables-(nft|legacy)-restore$/))?.stdin ?? "";
}

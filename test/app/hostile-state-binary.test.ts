// The built binary on a --state file whose objects have fields of the wrong type: the dry run
// completes (exit 0), each bad field is logged by name and value, and nothing crashes.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary, tempDir } from "../support/binary.ts";

const STATE = `apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: "x"
spec:
  podCIDR: 5
  podCIDRs: "x"
  taints: 3
status:
  addresses: {}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: { name: kubernetes }
spec: { cidrs: "198.51.100.0/24" }
---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: default }
spec:
  type: ClusterIP
  clusterIP: 198.51.100.10
  clusterIPs: [198.51.100.10]
  ports:
    - { name: http, port: 80, targetPort: 8080, protocol: TCP }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abc12
  namespace: default
  labels: { kubernetes.io/service-name: web }
addressType: IPv4
ports:
  - { name: http, port: 8080, protocol: TCP }
endpoints:
  - addresses: [203.0.113.11]
    nodeName: node-a
  - addresses: [203.0.113.12]
    nodeName: "Node_B/../x"
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: "web/evil"
  namespace: default
  labels: { kubernetes.io/service-name: web }
addressType: IPv4
ports:
  - { name: http, port: 8080, protocol: TCP }
endpoints:
  - addresses: [203.0.113.66]
`;

describe("a --state file with wrong-typed fields", () => {
  test("dry run exits 0, logs each bad field with its value, and shows no stack trace", () => {
    const file = join(tempDir(), "state.yaml");
    writeFileSync(file, STATE);
    const r = runBinary(["--dry-run", "--output=json", "--state", file, "--detect-local-mode=NodeCIDR"]);
    expect(r.stderr).not.toMatch(/TypeError|^\s+at /m);
    expect(r.code).toBe(0);
    for (const [field, value] of [
      ["metadata.labels", "x"],
      ["spec.podCIDRs", "x"],
      ["spec.podCIDR", "5"],
      ["status.addresses", "{}"],
      ["spec.cidrs", "198.51.100.0/24"],
      ["endpoints[1].nodeName", "Node_B/../x"],
      ["metadata.name", "web/evil"],
    ]) {
      const line = r.stderr.split("\n").find((l) => l.includes(`field="${field}"`));
      expect(line, field).toBeDefined();
      expect(line).toContain(value!);
    }
    // The good endpoint is planned; the ones behind bad names are not.
    const restores = (JSON.parse(r.stdout) as { commands: { stdin?: string }[] }).commands
      .map((c) => c.stdin ?? "")
      .join("\n");
    expect(restores).toContain("203.0.113.11");
    expect(restores).not.toContain("203.0.113.12");
    expect(restores).not.toContain("203.0.113.66");
  });
});

// The built binary refuses an interface name that Linux or the rule languages would not take,
// before touching anything: exit 1, naming the field, the value and the flag it came from.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary, tempDir } from "../support/binary.ts";

describe("interface names on the command line and in the config file", () => {
  test("--pod-bridge-interface with whitespace: exit 1 with field, value and flag", () => {
    const r = runBinary([
      "--dry-run",
      "--detect-local-mode=BridgeInterface",
      "--pod-bridge-interface=cbr0 -j ACCEPT",
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'detectLocal.bridgeInterface: "cbr0 -j ACCEPT": must not contain whitespace (flag --pod-bridge-interface)',
    );
    expect(r.stdout).toBe("");
  });

  test("detectLocal.interfaceNamePrefix with a wildcard in the config file: exit 1", () => {
    const file = join(tempDir(), "config.yaml");
    writeFileSync(
      file,
      `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
detectLocalMode: InterfaceNamePrefix
detectLocal:
  interfaceNamePrefix: "veth+"
`,
    );
    const r = runBinary(["--dry-run", "--config", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('detectLocal.interfaceNamePrefix: "veth+": must not contain');
  });
});

// deploy/systemd: the unit starts the binary with flags it accepts and the shipped config, and
// that config loads with the project's own loader, naming the kubeconfig the README installs.
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { resolveCommandLine } from "../../src/cli/index.ts";
import { loadConfig } from "../../src/config/load.ts";
import { ensureBinary, tempDir } from "../support/binary.ts";
import { DEPLOY_DIR } from "./manifests.ts";

const CONFIG_PATH = join(DEPLOY_DIR, "systemd", "config.yaml");
const UNIT_PATH = join(DEPLOY_DIR, "systemd", "kube-proxy-ts.service");
const INSTALLED_CONFIG = "/etc/kube-proxy-ts/config.yaml";

/** The unit file as section -> key -> values (keys may repeat). */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header?.[1]) {
      current = new Map();
      sections.set(header[1], current);
      continue;
    }
    const eq = line.indexOf("=");
    if (!current || eq < 0) throw new Error(`bad unit line: ${line}`);
    const key = line.slice(0, eq).trim();
    current.set(key, [...(current.get(key) ?? []), line.slice(eq + 1).trim()]);
  }
  return sections;
}

describe("deploy/systemd", () => {
  const configText = readFileSync(CONFIG_PATH, "utf8");
  const unit = parseUnit(readFileSync(UNIT_PATH, "utf8"));
  const service = unit.get("Service");

  test("config.yaml loads with the project's config loader, no issues and no unknown fields", () => {
    const r = loadConfig({ file: { name: CONFIG_PATH, text: configText }, settings: [] });
    expect(r.issues).toEqual([]);
    expect(r.warnings).toEqual([]);
    expect(r.config?.clientConnection.kubeconfig).toBe("/etc/kube-proxy-ts/kubeconfig");
  });

  test("ExecStart runs the installed binary with flags it accepts and the installed config", () => {
    const [exec] = service?.get("ExecStart") ?? [];
    const [program, ...args] = (exec ?? "").split(/\s+/);
    expect(program).toBe("/usr/local/bin/kube-proxy-ts");
    expect(args).toEqual([`--config=${INSTALLED_CONFIG}`]);
    const cmd = resolveCommandLine(args, (p) => {
      if (p !== INSTALLED_CONFIG) throw new Error(`unexpected file ${p}`);
      return configText;
    });
    if (cmd.kind !== "run") throw new Error(`rejected: ${JSON.stringify(cmd)}`);
    expect(cmd.warnings).toEqual([]);
  });

  test("restarts always, after the network is online, and keeps what rule programming needs", () => {
    expect(service?.get("Restart")).toEqual(["always"]);
    expect(unit.get("Unit")?.get("After")).toEqual(["network-online.target"]);
    expect(unit.get("Unit")?.get("Wants")).toEqual(["network-online.target"]);
    const caps = (service?.get("CapabilityBoundingSet") ?? []).join(" ").split(/\s+/);
    for (const cap of ["CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_SYS_MODULE"]) expect(caps).toContain(cap);
    // No User=: iptables, ipvs and the sysctls need root. /proc/sys must stay writable.
    expect(service?.has("User")).toBe(false);
    expect(service?.has("ProtectKernelTunables")).toBe(false);
    expect(service?.has("PrivateNetwork")).toBe(false);
    expect(service?.has("MemoryDenyWriteExecute")).toBe(false); // the JavaScript JIT needs it
    expect(unit.get("Install")?.get("WantedBy")).toEqual(["multi-user.target"]);
  });

  test("systemd itself accepts the unit (where systemd-analyze is installed)", () => {
    const analyze = spawnSync("systemd-analyze", ["--version"], { encoding: "utf8" });
    if (analyze.status !== 0) return; // no systemd on this host: the parse above is all we can do
    const dir = tempDir("kpts-unit-");
    try {
      // The same unit, starting the binary this tree builds (systemd checks that it exists).
      const unitPath = join(dir, "kube-proxy-ts.service");
      writeFileSync(
        unitPath,
        readFileSync(UNIT_PATH, "utf8").replace(
          "ExecStart=/usr/local/bin/kube-proxy-ts",
          `ExecStart=${ensureBinary()}`,
        ),
      );
      const r = spawnSync("systemd-analyze", ["verify", unitPath], { encoding: "utf8", timeout: 30_000 });
      expect(`${r.stdout}${r.stderr}`.trim()).toBe("");
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

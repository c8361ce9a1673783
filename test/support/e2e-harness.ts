// The shape every real-binary traffic suite shares (iptables on the host and in the guest, ipvs
// in the guest): one topology, one kube-proxy-ts daemon and its --state file per describe block;
// tests that print the daemon's log and the node's rules when they fail; a teardown that leaves
// no namespace behind.

import { test } from "bun:test";
import { rmSync } from "node:fs";
import { diagnostics } from "./e2e-kubeproxy.ts";
import { scaled } from "./kernel-vm.ts";
import { type Daemon, namespaceExists, type Topology } from "./netns.ts";

/** A traffic test's (and its setup's) limit: a minute, stretched on an emulated CPU. */
export const E2E_TEST_TIMEOUT_MS = scaled(60_000);

export interface Harness {
  topo?: Topology;
  kubeProxy?: Daemon;
  stateFile?: string;
  dir?: string;
  /** More of the node's state for a failure report (e.g. the IPVS table). */
  extraDiagnostics?: (topo: Topology) => Promise<string>;
}

/** The daemon's log, the node's rules, conntrack, and whatever the suite adds. */
export async function harnessDiagnostics(h: Harness): Promise<string> {
  if (!h.topo) return "(no topology)";
  const base = await diagnostics(h.topo, h.kubeProxy, h.stateFile);
  return h.extraDiagnostics ? `${base}\n${await h.extraDiagnostics(h.topo)}` : base;
}

/** Runs `fn`; when it throws, prints the diagnostics under `title` and rethrows. */
export async function withDiagnostics<T>(h: Harness, title: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    console.error(`\n===== diagnostics for ${title} =====\n${await harnessDiagnostics(h)}`);
    throw err;
  }
}

/** A test that, when it fails, prints the diagnostics. */
export function e2eTest(
  h: Harness,
  name: string,
  fn: () => Promise<void>,
  timeoutMs = E2E_TEST_TIMEOUT_MS,
): void {
  test(name, () => withDiagnostics(h, `"${name}"`, fn), timeoutMs);
}

/** Stops the daemon, deletes the topology and the temp dir; throws if a namespace is left. */
export async function tearDownHarness(h: Harness): Promise<void> {
  const names = Object.values(h.topo?.namespaces ?? {});
  try {
    await h.kubeProxy?.kill(3000);
    await h.topo?.destroy();
  } finally {
    if (h.dir) rmSync(h.dir, { recursive: true, force: true });
  }
  const left = names.filter(namespaceExists);
  if (left.length > 0) throw new Error(`namespaces left behind: ${left.join(", ")}`);
}

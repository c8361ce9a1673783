import { describe, expect, test } from "bun:test";
import { HostStateError } from "../../../src/host/host-state/errors.ts";
import { ipsetFromHostState, kernelFromHostState } from "../../../src/host/host-state/overlay.ts";
import { parseHostState } from "../../../src/host/host-state/schema.ts";
import { createIpsetClient } from "../../../src/host/ipset/client.ts";
import { createFakeIpset } from "../../../src/host/ipset/testing/fake.ts";
import { createFakeKernel } from "../../../src/host/kernel/testing/fake.ts";

const head = { apiVersion: "kube-proxy-ts/v1", kind: "HostState" };

describe("HostState", () => {
  test("stated facts replace the live probe, and modprobe is never asked", async () => {
    const live = createFakeKernel({ version: "5.4.0", loadable: ["ip_vs_lc"] });
    const k = kernelFromHostState(
      parseHostState({ ...head, kernelVersion: "6.1.0", modules: ["ip_vs", "ip-vs-rr"] }),
      live,
    );
    expect(await k.version()).toBe("6.1.0");
    expect([...(await k.modules()).loaded]).toEqual(["ip_vs", "ip_vs_rr"]);
    expect((await k.loadModule("ip_vs_lc")).ok).toBe(false);
    expect(live.loaded.size).toBe(0);
  });

  test("omitted facts are probed live", async () => {
    const live = createFakeKernel({ version: "5.4.0", loaded: ["ip_vs"] });
    const k = kernelFromHostState(parseHostState({ ...head }), live);
    expect(await k.version()).toBe("5.4.0");
    expect([...(await k.modules()).loaded]).toEqual(["ip_vs"]);
    const liveIpset = createIpsetClient({ exec: createFakeIpset({ version: "7.1" }).install() });
    expect(await ipsetFromHostState(parseHostState(head), liveIpset).version()).toEqual({
      ok: true,
      version: "7.1",
    });
    expect(
      await ipsetFromHostState(parseHostState({ ...head, ipsetVersion: "v6.38" }), liveIpset).version(),
    ).toEqual({
      ok: true,
      version: "6.38",
    });
  });

  test("a wrong field is an error that names it", () => {
    expect(() => parseHostState({ ...head, kernelVersion: 6 })).toThrow(HostStateError);
    expect(() => parseHostState({ ...head, kernelVersion: 6 })).toThrow(/kernelVersion/);
    expect(() => parseHostState({ ...head, bogus: true })).toThrow(/bogus/);
  });
});

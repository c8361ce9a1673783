import { describe, expect, test } from "bun:test";
import { MultiFamilyProxier } from "../../src/proxy/multi-family.ts";
import type { Proxier, SyncInput } from "../../src/proxy/proxier.ts";

const counting = (fail: boolean): Proxier & { calls: number } => {
  const p = {
    calls: 0,
    async sync(_input: SyncInput) {
      p.calls++;
      if (fail) throw new Error("restore failed");
    },
  };
  return p;
};
const input = {} as SyncInput;

describe("one proxier per family", () => {
  test("both families sync; one failing still lets the other sync, and the failure surfaces", async () => {
    const v4 = counting(true);
    const v6 = counting(false);
    await expect(new MultiFamilyProxier([v4, v6]).sync(input)).rejects.toThrow("restore failed");
    expect([v4.calls, v6.calls]).toEqual([1, 1]);
  });

  test("both failing reports both", async () => {
    await expect(new MultiFamilyProxier([counting(true), counting(true)]).sync(input)).rejects.toThrow(
      "sync failed for every IP family",
    );
  });

  test("success when every family succeeds", async () => {
    const v4 = counting(false);
    await new MultiFamilyProxier([v4]).sync(input);
    expect(v4.calls).toBe(1);
  });
});

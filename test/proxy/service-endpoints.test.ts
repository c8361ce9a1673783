// ServiceEndpoints.indexOf finds a port by its id whatever order lookups come in (it remembers
// where the last one was found: a sync asks in id order), and -1 for an id it does not hold.

import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { ServiceEndpoints } from "../../src/proxy/service-endpoints.ts";

describe("ServiceEndpoints.indexOf", () => {
  test("agrees with a scan of the ids for any sequence of lookups (generated)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ maxLength: 4 }), { maxLength: 40 }),
        fc.array(fc.oneof(fc.nat(60), fc.string({ maxLength: 4 })), { maxLength: 80 }),
        (raw, lookups) => {
          const ids = raw.map((s) => `ns/svc:${s}`).sort();
          const eps = new ServiceEndpoints(
            ids,
            ids.map(() => "TCP"),
            ids.map(() => []),
          );
          for (const l of lookups) {
            const id = typeof l === "number" ? (ids[l] ?? `ns/svc:${l}`) : `ns/svc:${l}`;
            expect(eps.indexOf(id)).toBe(ids.indexOf(id));
          }
        },
      ),
      { numRuns: 400, seed: 4002 },
    );
  });
});

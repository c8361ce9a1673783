import { describe, expect, test } from "bun:test";
import { endpointChain } from "../../../src/modes/iptables/chains.ts";
import { ServicePortNames } from "../../../src/modes/iptables/port-names.ts";
import type { EndpointInfo } from "../../../src/proxy/types.ts";
import { endpointInfo } from "../../support/endpoint-info.ts";

const ep = (n: number): EndpointInfo => endpointInfo(`10.0.${n >> 8}.${n & 255}`, 80);

describe("ServicePortNames endpoint chain memo", () => {
  const want = (e: EndpointInfo) => endpointChain("ns/svc:http", "tcp", e.endpoint);

  test("names are the hashed names, whatever the number of endpoints and after pruning", () => {
    const names = new ServicePortNames("ns/svc:http", "TCP");
    // Past the small-memo size, so both of its shapes are used.
    const all = Array.from({ length: 100 }, (_, i) => ep(i));
    // Outside any followed list: named, not remembered.
    for (const e of all) expect(names.endpointChain(e)).toBe(want(e));
    names.followEndpoints(all);
    for (const e of all) expect(names.endpointChain(e)).toBe(want(e));
    for (const e of [...all].reverse()) expect(names.endpointChain(e)).toBe(want(e));
    for (const e of all.filter((_, i) => i % 3 === 0)) expect(names.endpointChain(e)).toBe(want(e));
    // A new list of new objects: the names of the endpoints still there carry over.
    const later = Array.from({ length: 15 }, (_, i) => ep(85 + i));
    names.followEndpoints(later);
    for (const e of later) expect(names.endpointChain(e)).toBe(want(e));
    expect(names.endpointChain(ep(3))).toBe(want(ep(3)));
    names.followEndpoints([ep(3)]);
    expect(names.endpointChain(ep(3))).toBe(want(ep(3)));
    expect(names.endpointChain(ep(200))).toBe(want(ep(200)));
  });
});

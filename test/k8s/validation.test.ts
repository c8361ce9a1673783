// The API server's name rules, as kube-proxy re-checks them at the edge.
import { describe, expect, test } from "bun:test";
import {
  dns1035Label,
  dns1123Label,
  dns1123Subdomain,
  labelValue,
  shownText,
  shownValue,
  type Validator,
  validEndpointPortName,
  validEndpointSliceName,
  validHostname,
  validNamespace,
  validNodeName,
  validServiceCIDRName,
  validServiceName,
  validServiceNameLabel,
  validServicePortName,
  validZoneName,
} from "../../src/k8s/validation.ts";

const ok = (rule: Validator, values: unknown[]) => {
  for (const v of values) expect([v, rule(v)]).toEqual([v, undefined]);
};
const bad = (rule: Validator, values: unknown[]) => {
  for (const v of values) expect([v, typeof rule(v)]).toEqual([v, "string"]);
};

const NOT_STRINGS = [undefined, null, 5, true, [], ["a"], {}, { name: "a" }];

describe("DNS-1123 label", () => {
  test("accepts lower-case alphanumerics and inner dashes, up to 63", () => {
    ok(dns1123Label, ["a", "0", "web", "1abc", "a-b", "a--b", "x".repeat(63)]);
  });
  test("refuses empty, long, upper case, dots, slashes, colons, edges", () => {
    bad(dns1123Label, ["", "x".repeat(64), "Web", "a.b", "a/b", "b:c", "-a", "a-", "a_b", "a b", "ä"]);
    bad(dns1123Label, NOT_STRINGS);
  });
  test("says why", () => {
    expect(dns1123Label("x".repeat(64))).toContain("no more than 63 characters");
    expect(dns1123Label(5)).toBe("must be a string, not a number");
    expect(dns1123Label("a/b")).toContain("DNS-1123 label");
  });
});

describe("DNS-1035 label", () => {
  test("as a DNS-1123 label, but starting with a letter", () => {
    ok(dns1035Label, ["a", "web-1", "x".repeat(63)]);
    bad(dns1035Label, ["1abc", "0", "", "x".repeat(64), "a.b", "A"]);
  });
});

describe("DNS-1123 subdomain", () => {
  test("dot-separated labels, up to 253", () => {
    ok(dns1123Subdomain, [
      "a",
      "a.b",
      "node-1.example.com",
      "10.0.0.1",
      `${"a".repeat(100)}.${"b".repeat(152)}`,
    ]);
  });
  test("refuses empty parts, edges, upper case, slashes, long", () => {
    bad(dns1123Subdomain, ["", ".", "a.", ".a", "a..b", "a.-b", "Node", "a/b", "a:b", "x".repeat(254)]);
    bad(dns1123Subdomain, NOT_STRINGS);
  });
  test("a huge value is refused by its length, quickly and linearly", () => {
    expect(dns1123Subdomain("a.".repeat(1_000_000))).toContain("no more than 253");
  });
});

describe("label value", () => {
  test("empty, or alphanumeric ends with '-', '_', '.' inside, up to 63", () => {
    ok(labelValue, ["", "zone-a", "us-east-1a", "A_b.C", "x".repeat(63)]);
    bad(labelValue, ["-a", "a-", "_a", "a b", "a/b", "x".repeat(64), 5, null]);
  });
});

describe("per-field rules", () => {
  test("namespaces are DNS-1123 labels", () => {
    ok(validNamespace, ["default", "kube-system", "1ns"]);
    bad(validNamespace, ["a/b", "a.b", "Kube"]);
  });
  test("Service names are DNS-1123 labels (RelaxedServiceNameValidation, on since 1.36)", () => {
    ok(validServiceName, ["web", "1web"]);
    bad(validServiceName, ["b/c", "b:c", "a.b", "x".repeat(64)]);
    ok(validServiceNameLabel, ["web"]);
    bad(validServiceNameLabel, ["b/c", ""]);
  });
  test("EndpointSlice, Node and ServiceCIDR names are subdomains", () => {
    for (const rule of [validEndpointSliceName, validNodeName, validServiceCIDRName]) {
      ok(rule, ["web-abc12", "node-1.example.com", "kubernetes"]);
      bad(rule, ["a/b", "Node_1", ""]);
    }
  });
  test("port names are DNS-1123 labels or empty", () => {
    for (const rule of [validServicePortName, validEndpointPortName]) {
      ok(rule, ["", "http", "dns-tcp", "8080"]);
      bad(rule, ["HTTP", "a:b", "a/b", "a.b", "x".repeat(64), null, 80]);
    }
  });
  test("zones are label values; hostnames DNS-1123 labels", () => {
    ok(validZoneName, ["zone-a", "us-east-1a", ""]);
    bad(validZoneName, ["zone a", "zone/a", "x".repeat(64)]);
    ok(validHostname, ["pod-0"]);
    bad(validHostname, ["pod.0", ""]);
  });
});

describe("shownValue", () => {
  test("short values pass unchanged", () => {
    expect(shownValue("web")).toBe("web");
    expect(shownValue(5)).toBe(5);
    expect(shownValue({ a: 1 })).toEqual({ a: 1 });
  });
  test("long strings and big objects are cut, saying how big they were", () => {
    const cut = shownValue("x".repeat(10_000)) as string;
    expect(cut.length).toBeLessThan(200);
    expect(cut).toContain("10000 characters");
    const big = shownValue({ list: Array.from({ length: 1000 }, (_, i) => i) }) as string;
    expect(typeof big).toBe("string");
    expect(big).toContain("an object");
  });
  test("shownText is always a string", () => {
    expect(shownText({ a: 1 })).toBe('{"a":1}');
    expect(shownText(undefined)).toBe("undefined");
    expect(shownText("x")).toBe("x");
  });
});

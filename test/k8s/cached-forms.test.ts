import { describe, expect, test } from "bun:test";
import { dropUnreadMetadata, endpointSliceIdentity } from "../../src/k8s/cached-forms.ts";
import type { EndpointSliceObject } from "../../src/k8s/objects.ts";

describe("endpointSliceIdentity", () => {
  test("keeps what a deletion needs and no endpoints", () => {
    const slice = {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: "web-abc",
        namespace: "default",
        resourceVersion: "12",
        uid: "u-1",
        labels: { "kubernetes.io/service-name": "web", "endpointslice.kubernetes.io/managed-by": "x" },
        annotations: { a: "b" },
      },
      addressType: "IPv4",
      endpoints: [{ addresses: ["10.0.0.1"], conditions: { ready: true } }],
      ports: [{ name: "http", port: 80, protocol: "TCP" }],
    } as EndpointSliceObject;
    expect(endpointSliceIdentity(slice)).toEqual({
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: "web-abc",
        namespace: "default",
        resourceVersion: "12",
        uid: "u-1",
        labels: { "kubernetes.io/service-name": "web" },
      },
      addressType: "IPv4",
    });
  });

  test("untrusted values are copied as they came; a missing label or metadata stays missing", () => {
    const odd = { metadata: { name: 5, labels: { "kubernetes.io/service-name": ["x"] } } } as never;
    expect(endpointSliceIdentity(odd).metadata).toEqual({
      name: 5,
      namespace: undefined,
      resourceVersion: undefined,
      labels: { "kubernetes.io/service-name": ["x"] },
    } as never);
    expect(endpointSliceIdentity({ metadata: "x" } as never).metadata?.labels).toBeUndefined();
    expect(endpointSliceIdentity({ metadata: { labels: "x" } } as never).metadata?.labels).toBeUndefined();
  });
});

describe("dropUnreadMetadata", () => {
  test("drops managedFields and kubectl's last-applied-configuration, in place, and nothing else", () => {
    const obj = {
      metadata: {
        name: "web",
        managedFields: [{ manager: "kubectl" }],
        annotations: {
          "kubectl.kubernetes.io/last-applied-configuration": "{}",
          "service.kubernetes.io/topology-mode": "Auto",
        },
      },
      spec: { ports: [] },
    };
    dropUnreadMetadata(obj);
    expect(obj).toEqual({
      metadata: { name: "web", annotations: { "service.kubernetes.io/topology-mode": "Auto" } },
      spec: { ports: [] },
    } as never);
  });

  test("objects without metadata, or with odd metadata, are left alone", () => {
    for (const o of [{}, { metadata: null }, { metadata: "x" }, { metadata: { annotations: 3 } }]) {
      const before = JSON.stringify(o);
      dropUnreadMetadata(o);
      expect(JSON.stringify(o)).toBe(before);
    }
  });
});

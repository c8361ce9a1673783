import { describe, expect, test } from "bun:test";
import { ObjectStore, objectKey } from "../../src/k8s/store.ts";

interface Obj {
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  v?: number;
}

const o = (name: string, rv: string, v = 0, namespace = "ns"): Obj => ({
  metadata: { name, namespace, resourceVersion: rv },
  v,
});

describe("ObjectStore", () => {
  test("keys are namespace/name, or name alone for cluster-scoped objects", () => {
    expect(objectKey(o("a", "1"))).toBe("ns/a");
    expect(objectKey({ metadata: { name: "node-1" } })).toBe("node-1");
  });

  test("names that would make keys ambiguous get keys no other object can have", () => {
    const keys = [
      objectKey({ metadata: { namespace: "a", name: "b/c" } }),
      objectKey({ metadata: { namespace: "a/b", name: "c" } }),
      objectKey({ metadata: { name: "a/b" } }),
      objectKey({ metadata: { namespace: "a", name: "b" } }),
      objectKey({ metadata: { namespace: "a", name: 5 as never } }),
      objectKey({ metadata: { namespace: "a", name: "5" } }),
      objectKey({ metadata: "x" as never }),
    ];
    expect(new Set(keys).size).toBe(keys.length);
    const s = new ObjectStore<Obj>();
    expect(s.apply({ metadata: { namespace: "a", name: "b/c" } })).toEqual({ change: "added" });
    expect(s.apply({ metadata: { namespace: "a/b", name: "c" } })).toEqual({ change: "added" });
    expect(s.size).toBe(2);
  });

  test("apply reports added, updated with the previous copy, and unchanged for the same resourceVersion", () => {
    const s = new ObjectStore<Obj>();
    expect(s.apply(o("a", "1"))).toEqual({ change: "added" });
    expect(s.apply(o("a", "1", 5))).toEqual({ change: "unchanged" });
    const r = s.apply(o("a", "2", 7));
    expect(r.change).toBe("updated");
    expect(r.change === "updated" && r.previous.metadata.resourceVersion).toBe("1");
    expect(s.get("ns/a")?.v).toBe(7);
  });

  test("remove returns the cached copy once", () => {
    const s = new ObjectStore<Obj>();
    s.apply(o("a", "1", 3));
    expect(s.remove(o("a", "9"))?.v).toBe(3);
    expect(s.remove(o("a", "9"))).toBeUndefined();
    expect(s.size).toBe(0);
  });

  test("replace deletes only what the new list lacks, with its last known state", () => {
    const s = new ObjectStore<Obj>();
    s.apply(o("keep", "1"));
    s.apply(o("change", "2", 1));
    s.apply(o("gone", "3", 42));
    const r = s.replace([o("keep", "1"), o("change", "5", 2), o("new", "6")]);
    expect(r.added.map((x) => x.metadata.name)).toEqual(["new"]);
    expect(r.updated.map((u) => [u.previous.v, u.current.v])).toEqual([[1, 2]]);
    expect(r.deleted.map((x) => [x.metadata.name, x.v])).toEqual([["gone", 42]]);
    expect(
      s
        .values()
        .map((x) => x.metadata.name)
        .sort(),
    ).toEqual(["change", "keep", "new"]);
  });

  test("the same name in another namespace is another object", () => {
    const s = new ObjectStore<Obj>();
    s.apply(o("a", "1", 0, "x"));
    const r = s.replace([o("a", "1", 0, "y")]);
    expect(r.added).toHaveLength(1);
    expect(r.deleted.map((d) => d.metadata.namespace)).toEqual(["x"]);
  });

  test("keeps what `kept` makes of each object: get, values, previous and deletions are that form", () => {
    const s = new ObjectStore<Obj>((x) => ({ metadata: x.metadata }));
    expect(s.apply(o("a", "1", 7))).toEqual({ change: "added" });
    expect(s.get("ns/a")).toEqual({ metadata: { name: "a", namespace: "ns", resourceVersion: "1" } });
    expect(s.apply(o("a", "1", 8))).toEqual({ change: "unchanged" });
    const r = s.apply(o("a", "2", 9));
    expect(r.change === "updated" && r.previous.v).toBeUndefined();
    const d = s.replace([o("b", "1", 5)]);
    expect(d.added[0]!.v).toBe(5);
    expect(d.deleted).toEqual([{ metadata: { name: "a", namespace: "ns", resourceVersion: "2" } }]);
  });
});

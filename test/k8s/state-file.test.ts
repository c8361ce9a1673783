import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { renderEmbedded } from "../../scripts/gen-embedded.ts";
import { EXAMPLE_CLUSTER_YAML } from "../../src/generated/example-cluster.ts";
import { parseStateDocuments, StateFileError } from "../../src/k8s/state-file.ts";

describe("state file documents", () => {
  test("the example cluster parses into services, slices and the node", () => {
    const docs = parseStateDocuments(readFileSync("examples/cluster.yaml", "utf8"), "examples/cluster.yaml");
    expect(docs.services.map((s) => s.metadata?.name)).toEqual([
      "web",
      "dns",
      "shop",
      "ingress",
      "metrics",
      "pending",
    ]);
    expect(docs.endpointSlices.length).toBe(5);
    expect(docs.nodes.map((n) => n.metadata?.name)).toEqual(["node-a"]);
    expect(docs.hostState).toBeUndefined();
  });

  test("the embedded copy is in sync with examples/cluster.yaml", () => {
    const text = readFileSync("examples/cluster.yaml", "utf8");
    expect(EXAMPLE_CLUSTER_YAML).toBe(text);
    expect(readFileSync("src/generated/example-cluster.ts", "utf8")).toBe(renderEmbedded(text));
  });

  test("v1 List items are flattened; JSON works; unknown kinds are reported", () => {
    const list = JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [
        { apiVersion: "v1", kind: "Service", metadata: { name: "a", namespace: "default" } },
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" } },
      ],
    });
    const docs = parseStateDocuments(list, "list.json");
    expect(docs.services.length).toBe(1);
    expect(docs.ignored).toEqual(["v1 ConfigMap default/c"]);
  });

  test("HostState is picked up, and a second one is an error", () => {
    const one = "apiVersion: kube-proxy-ts/v1\nkind: HostState\nkernelVersion: 6.1.0\n";
    expect(parseStateDocuments(one, "s.yaml").hostState?.kernelVersion).toBe("6.1.0");
    expect(() => parseStateDocuments(`${one}---\n${one}`, "s.yaml")).toThrow(/second HostState/);
  });

  test("a YAML syntax error names the source and line", () => {
    try {
      parseStateDocuments("apiVersion: v1\nkind: Service\nmetadata: [unclosed\n", "bad.yaml");
      throw new Error("expected a StateFileError");
    } catch (err) {
      expect(err).toBeInstanceOf(StateFileError);
      expect(String(err)).toMatch(/^StateFileError: bad\.yaml: document 1 line \d+/);
    }
  });
});

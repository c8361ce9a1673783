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

  test("a JSON snapshot gives the objects its YAML form gives, without the YAML parser", () => {
    const yaml = readFileSync("examples/cluster.yaml", "utf8");
    const fromYaml = parseStateDocuments(yaml, "cluster.yaml");
    const asList = JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [...fromYaml.nodes, ...fromYaml.services, ...fromYaml.endpointSlices],
    });
    const fromJson = parseStateDocuments(`\n  ${asList}\n`, "cluster.json");
    expect(fromJson.services).toEqual(fromYaml.services);
    expect(fromJson.endpointSlices).toEqual(fromYaml.endpointSlices);
    expect(fromJson.nodes).toEqual(fromYaml.nodes);
    // The YAML parser refuses a repeated key; JSON.parse keeps the last one: proof of the JSON path.
    const repeated = '{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x", "name": "y"}}';
    expect(parseStateDocuments(repeated, "r.json").services[0]?.metadata?.name).toBe("y");
    // Text that only starts like JSON still gets the YAML parser's verdict, line and all.
    expect(() => parseStateDocuments('{"apiVersion": "v1",\n  "kind": [', "bad.json")).toThrow(
      StateFileError,
    );
    // A top-level JSON array is refused as before.
    expect(() => parseStateDocuments("[1, 2]", "a.json")).toThrow("document 1 is not an object");
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

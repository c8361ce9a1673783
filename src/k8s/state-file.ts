// Reads a --state snapshot (DESIGN.md): multi-document YAML or JSON holding Services,
// EndpointSlices, Nodes, ServiceCIDRs (or v1 Lists of them) and at most one kube-proxy-ts/v1
// HostState.

import { parseAllDocuments } from "yaml";

export interface KubeObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: { name?: string; namespace?: string; [k: string]: unknown };
  readonly [k: string]: unknown;
}

export interface StateDocuments {
  readonly services: KubeObject[];
  readonly endpointSlices: KubeObject[];
  readonly nodes: KubeObject[];
  readonly serviceCIDRs: KubeObject[];
  readonly hostState?: KubeObject;
  /** Objects of other kinds, reported and otherwise ignored. */
  readonly ignored: string[];
}

export class StateFileError extends Error {
  constructor(
    readonly source: string,
    readonly detail: string,
  ) {
    super(`${source}: ${detail}`);
    this.name = "StateFileError";
  }
}

function describe(obj: KubeObject): string {
  const ns = obj.metadata?.namespace ? `${obj.metadata.namespace}/` : "";
  return `${obj.apiVersion ?? "?"} ${obj.kind ?? "?"} ${ns}${obj.metadata?.name ?? "?"}`;
}

function isObject(v: unknown): v is KubeObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The documents as JSON values, when every document (the whole text, or each part between
 * `---` lines) is JSON; undefined sends the text to the YAML parser.
 */
function parseJsonDocuments(text: string): unknown[] | undefined {
  const parts = text.split(/^---[ \t]*$/m).filter((p) => /\S/.test(p));
  const out: unknown[] = [];
  for (const part of parts) {
    const start = part.search(/\S/);
    if (part[start] !== "{" && part[start] !== "[") return undefined;
    try {
      out.push(JSON.parse(part));
    } catch {
      return undefined;
    }
  }
  return out.length > 0 ? out : undefined;
}

export function parseStateDocuments(text: string, source: string): StateDocuments {
  const services: KubeObject[] = [];
  const endpointSlices: KubeObject[] = [];
  const nodes: KubeObject[] = [];
  const serviceCIDRs: KubeObject[] = [];
  const ignored: string[] = [];
  let hostState: KubeObject | undefined;

  const place = (obj: KubeObject, where: string) => {
    const key = `${obj.apiVersion ?? ""}/${obj.kind ?? ""}`;
    switch (key) {
      case "v1/List":
        for (const [i, item] of (Array.isArray(obj.items) ? obj.items : []).entries()) {
          if (isObject(item)) place(item, `${where} items[${i}]`);
          else throw new StateFileError(source, `${where} items[${i}] is not an object`);
        }
        return;
      case "v1/Service":
        services.push(obj);
        return;
      case "discovery.k8s.io/v1/EndpointSlice":
        endpointSlices.push(obj);
        return;
      case "v1/Node":
        nodes.push(obj);
        return;
      case "networking.k8s.io/v1/ServiceCIDR":
        serviceCIDRs.push(obj);
        return;
      case "kube-proxy-ts/v1/HostState":
        if (hostState)
          throw new StateFileError(source, `${where}: a second HostState document (only one is allowed)`);
        hostState = obj;
        return;
      default:
        ignored.push(describe(obj));
    }
  };

  const placeDocument = (value: unknown, i: number) => {
    if (value == null) return;
    if (!isObject(value)) throw new StateFileError(source, `document ${i + 1} is not an object`);
    place(value, `document ${i + 1}`);
  };
  // A JSON snapshot (what `kubectl get -o json` prints) skips the YAML parser, which costs many
  // times more at scale; text that only looks like JSON falls back to YAML and its messages.
  const json = parseJsonDocuments(text);
  if (json) {
    for (const [i, value] of json.entries()) placeDocument(value, i);
    return { services, endpointSlices, nodes, serviceCIDRs, ignored, ...(hostState ? { hostState } : {}) };
  }
  const docs = parseAllDocuments(text, { prettyErrors: true });
  for (const [i, doc] of docs.entries()) {
    const first = doc.errors[0];
    if (first) {
      const line = first.linePos?.[0]?.line;
      throw new StateFileError(
        source,
        `document ${i + 1}${line ? ` line ${line}` : ""}: ${first.message.split("\n")[0]}`,
      );
    }
    placeDocument(doc.toJS(), i);
  }
  return { services, endpointSlices, nodes, serviceCIDRs, ignored, ...(hostState ? { hostState } : {}) };
}

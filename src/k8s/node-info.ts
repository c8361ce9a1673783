// What kube-proxy reads from its own Node: labels (topology), zone, pod CIDRs (--detect-local-mode
// NodeCIDR), node IPs (which address family is primary, LoadBalancerSourceRanges checks) and
// whether it is going away (health checks). Every field is read as untrusted JSON: one of the
// wrong type (a string for a list, a number for a string) is told to `notes` and ignored, so a
// broken Node never throws in the readers and never stalls the Node view.

import { parseCIDRLenient, platformIPFamily } from "../util/net/address.ts";
import type { NodeObject } from "./objects.ts";
import { shownValue, validZoneName } from "./validation.ts";

export const LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone";

/** Where the readers tell of a field they ignored (a ProblemList fits); the default is silent. */
export interface FieldNotes {
  note(field: string, value: unknown, detail: string): unknown;
}

const QUIET: FieldNotes = { note() {} };

export interface NodeIPs {
  /** Primary first, then at most one address of the other family (upstream's GetNodeHostIPs). */
  readonly ordered: readonly string[];
  readonly ipv4?: string;
  readonly ipv6?: string;
}

export interface NodeInfo {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly zone?: string;
  readonly podCIDRs: readonly string[];
  readonly ips: NodeIPs;
}

/** The parts of a Node that decide whether load balancers should keep using it. */
export interface NodeEligibility {
  readonly metadata: { readonly deletionTimestamp?: string };
  readonly spec: { readonly taints: readonly { readonly key: string }[] };
}

type Fields = Record<string, unknown>;

function isFields(value: unknown): value is Fields {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** An optional object-valued field; anything else set there is noted and read as absent. */
function objectAt(
  parent: Fields | undefined,
  key: string,
  path: string,
  notes: FieldNotes,
): Fields | undefined {
  const value = parent?.[key];
  if (value === undefined || value === null) return undefined;
  if (isFields(value)) return value;
  notes.note(path, shownValue(value), `not an object but ${typeName(value)}; ignored`);
  return undefined;
}

/** An optional list-valued field; anything else set there is noted and read as empty. */
function listAt(
  parent: Fields | undefined,
  key: string,
  path: string,
  notes: FieldNotes,
): readonly unknown[] {
  const value = parent?.[key];
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) return value;
  notes.note(path, shownValue(value), `not a list but ${typeName(value)}; ignored`);
  return [];
}

/** An optional string field; "" when absent, and when of another type (noted). */
function stringAt(parent: Fields | undefined, key: string, path: string, notes: FieldNotes): string {
  const value = parent?.[key];
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  notes.note(path, shownValue(value), `not a string but ${typeName(value)}; ignored`);
  return "";
}

const root = (node: unknown, notes: FieldNotes): Fields | undefined => {
  if (isFields(node)) return node;
  if (node !== undefined && node !== null) notes.note("", shownValue(node), "Node is not an object; ignored");
  return undefined;
};

/** metadata.labels whose values are strings; other values are noted and left out. */
function labelsOf(meta: Fields | undefined, notes: FieldNotes): Record<string, string> {
  const labels = objectAt(meta, "labels", "metadata.labels", notes);
  const kept: [string, string][] = [];
  for (const [key, value] of Object.entries(labels ?? {})) {
    if (typeof value === "string") kept.push([key, value]);
    else
      notes.note(`metadata.labels["${shownValue(key)}"]`, shownValue(value), "not a string; label ignored");
  }
  // fromEntries defines own properties: a "__proto__" key stays a key, never a prototype.
  return Object.fromEntries(kept);
}

function ipsOf(status: Fields | undefined, notes: FieldNotes): NodeIPs {
  const byType: Record<"InternalIP" | "ExternalIP", string[]> = { InternalIP: [], ExternalIP: [] };
  for (const [i, entry] of listAt(status, "addresses", "status.addresses", notes).entries()) {
    const path = `status.addresses[${i}]`;
    if (!isFields(entry)) {
      notes.note(path, shownValue(entry), "not an object; address ignored");
      continue;
    }
    const type = stringAt(entry, "type", `${path}.type`, notes);
    const address = stringAt(entry, "address", `${path}.address`, notes).trim();
    if (type === "InternalIP" || type === "ExternalIP") byType[type].push(address);
  }
  const candidates = [...byType.InternalIP, ...byType.ExternalIP].filter(
    (a) => platformIPFamily(a) !== undefined,
  );
  const ipv4 = candidates.find((a) => platformIPFamily(a) === "IPv4");
  const ipv6 = candidates.find((a) => platformIPFamily(a) === "IPv6");
  const primary = candidates[0];
  const ordered =
    primary === undefined ? [] : platformIPFamily(primary) === "IPv4" ? [primary, ipv6] : [primary, ipv4];
  return {
    ordered: ordered.filter((a): a is string => a !== undefined),
    ...(ipv4 ? { ipv4 } : {}),
    ...(ipv6 ? { ipv6 } : {}),
  };
}

function podCIDRsOf(spec: Fields | undefined, notes: FieldNotes): string[] {
  const list: string[] = [];
  for (const [i, entry] of listAt(spec, "podCIDRs", "spec.podCIDRs", notes).entries()) {
    const path = `spec.podCIDRs[${i}]`;
    if (typeof entry !== "string") notes.note(path, shownValue(entry), "not a string; ignored");
    else if (parseCIDRLenient(entry)) list.push(entry);
    else if (entry !== "") notes.note(path, shownValue(entry), "not a CIDR; ignored");
  }
  if (list.length) return list;
  const single = stringAt(spec, "podCIDR", "spec.podCIDR", notes);
  if (single === "") return [];
  if (parseCIDRLenient(single)) return [single];
  notes.note("spec.podCIDR", shownValue(single), "not a CIDR; ignored");
  return [];
}

/** The Node's metadata, spec and status objects, each undefined when absent or not an object. */
function sections(node: unknown, notes: FieldNotes) {
  const top = root(node, notes);
  return {
    meta: objectAt(top, "metadata", "metadata", notes),
    spec: objectAt(top, "spec", "spec", notes),
    status: objectAt(top, "status", "status", notes),
  };
}

/** InternalIP addresses first, then ExternalIP; the first is primary, the first of the other family second. */
export function nodeIPs(node: unknown, notes: FieldNotes = QUIET): NodeIPs {
  return ipsOf(objectAt(root(node, notes), "status", "status", notes), notes);
}

/** spec.podCIDRs when it holds any CIDR, else the older single spec.podCIDR; non-CIDRs are noted and dropped. */
export function nodePodCIDRs(node: unknown, notes: FieldNotes = QUIET): string[] {
  return podCIDRsOf(objectAt(root(node, notes), "spec", "spec", notes), notes);
}

/** metadata.name, or "" when it is missing or not a string. */
export function nodeName(node: unknown, notes: FieldNotes = QUIET): string {
  return stringAt(objectAt(root(node, notes), "metadata", "metadata", notes), "name", "metadata.name", notes);
}

/** Deletion and taints, as the health server judges them; malformed taints are noted and skipped. */
export function nodeEligibility(node: unknown, notes: FieldNotes = QUIET): NodeEligibility {
  const { meta, spec } = sections(node, notes);
  const stamp = meta?.deletionTimestamp;
  // The informer may hand over a Date; a text stamp is what JSON and YAML give.
  const deletion =
    stamp instanceof Date
      ? stamp.toISOString()
      : stringAt(meta, "deletionTimestamp", "metadata.deletionTimestamp", notes);
  const taints: { key: string }[] = [];
  for (const [i, entry] of listAt(spec, "taints", "spec.taints", notes).entries()) {
    if (!isFields(entry)) {
      notes.note(`spec.taints[${i}]`, shownValue(entry), "not an object; taint ignored");
      continue;
    }
    const key = stringAt(entry, "key", `spec.taints[${i}].key`, notes);
    if (key !== "") taints.push({ key });
  }
  return { metadata: deletion ? { deletionTimestamp: deletion } : {}, spec: { taints } };
}

/** Everything the proxiers take from the Node; wrong-typed fields are told to `notes`, once each. */
export function nodeInfo(node: NodeObject | unknown, notes: FieldNotes = QUIET): NodeInfo {
  const { meta, spec, status } = sections(node, notes);
  const labels = labelsOf(meta, notes);
  const zoneLabel = labels[LABEL_TOPOLOGY_ZONE];
  // Topology compares the zone with hints, which are label values: one that is not is no zone.
  const badZone = zoneLabel === undefined ? undefined : validZoneName(zoneLabel);
  if (badZone)
    notes.note(`metadata.labels["${LABEL_TOPOLOGY_ZONE}"]`, shownValue(zoneLabel), `${badZone}; no zone`);
  const zone = badZone ? undefined : zoneLabel;
  return {
    name: stringAt(meta, "name", "metadata.name", notes),
    labels,
    ...(zone ? { zone } : {}),
    podCIDRs: podCIDRsOf(spec, notes),
    ips: ipsOf(status, notes),
  };
}

// Reads one EndpointSlice into the small, validated form the cache keeps: its usable ports and
// endpoints, and a fingerprint so that re-delivered or reordered slices count as unchanged.

import type { EndpointSliceObject } from "../k8s/objects.ts";
import {
  shownValue,
  type Validator,
  validEndpointPortName,
  validNodeName,
  validZoneName,
} from "../k8s/validation.ts";
import { parseIPLenient } from "../util/net/address.ts";
import type { IPFamily } from "../util/net/family.ts";
import { isPortNumber } from "../util/net/host-port.ts";
import type { Protocol } from "../util/net/protocol.ts";
import { parseProtocol } from "../util/net/protocol.ts";
import { sha256Base32Prefix } from "../util/sha256-base32.ts";
import { type ProblemList, REASON_INCORRECT_IP_VERSION } from "./problems.ts";

export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
export const TRIGGER_TIME_ANNOTATION = "endpoints.kubernetes.io/last-change-trigger-time";

export interface SlicePort {
  readonly name: string;
  readonly port: number;
  readonly protocol: Protocol;
}

/** One endpoint of a slice, before it is paired with a port. */
export interface SliceEndpoint {
  readonly ip: string;
  readonly family: IPFamily;
  readonly nodeName: string;
  readonly zone: string;
  /** On this node (SliceContext.nodeName): every port of the endpoint shares this record. */
  readonly isLocal: boolean;
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  readonly zoneHints: ReadonlySet<string>;
  readonly nodeHints: ReadonlySet<string>;
}

/**
 * A slice's usable ports, sorted by port number then name: parallel arrays, no object per port
 * (a slice may list 20,000 ports, and the cache keeps every slice).
 */
export class SlicePorts {
  private readonly names: string[] = [];
  private readonly numbers: number[] = [];
  private readonly protocols: Protocol[] = [];

  constructor(ports: readonly SlicePort[]) {
    for (const p of ports) {
      this.names.push(p.name);
      this.numbers.push(p.port);
      this.protocols.push(p.protocol);
    }
  }

  get size(): number {
    return this.names.length;
  }

  /** Port `i`, as a record made for the caller. */
  at(i: number): SlicePort {
    return { name: this.names[i]!, port: this.numbers[i]!, protocol: this.protocols[i]! };
  }
}

export interface ParsedSlice {
  readonly ports: SlicePorts;
  readonly endpoints: readonly SliceEndpoint[];
  readonly fingerprint: string;
}

type RawPort = NonNullable<EndpointSliceObject["ports"]>[number];
type RawEndpoint = NonNullable<EndpointSliceObject["endpoints"]>[number];

// Upstream skips ports with a nil name or a nil/zero port, and relies on the API default (TCP)
// for the protocol; a value that is not a port or protocol at all is a bad field.
function readSlicePort(raw: RawPort, path: string, problems: ProblemList): SlicePort | undefined {
  if (typeof raw !== "object" || raw === null)
    return problems.invalid(path, shownValue(raw), "not a port object; port skipped");
  if (raw.name === undefined || raw.name === null)
    return problems.note(`${path}.name`, raw.name, "nil port name; port skipped");
  const badName = validEndpointPortName(raw.name);
  if (badName) return problems.invalid(`${path}.name`, shownValue(raw.name), `${badName}; port skipped`);
  if (raw.port === undefined || raw.port === null || raw.port === 0) {
    return problems.note(`${path}.port`, raw.port, "nil or zero port; port skipped");
  }
  if (!isPortNumber(raw.port))
    return problems.invalid(`${path}.port`, shownValue(raw.port), "not a port number; port skipped");
  const protocol = parseProtocol(raw.protocol);
  if (!protocol)
    return problems.invalid(`${path}.protocol`, shownValue(raw.protocol), "unknown protocol; port skipped");
  return { name: raw.name as string, port: raw.port, protocol };
}

/** Upstream kube-proxy's reading of missing conditions: ready and serving unless false; terminating only if true. */
function conditions(raw: RawEndpoint): Pick<SliceEndpoint, "ready" | "serving" | "terminating"> {
  const c = raw.conditions ?? {};
  const ready = c.ready !== false;
  const serving = c.serving !== false;
  return { ready, serving, terminating: c.terminating === true };
}

// Most endpoints have no hints: they share one empty set (no one writes to these sets) rather
// than carry 100,000 empty ones in a large cluster.
const NO_HINTS: ReadonlySet<string> = new Set();

/**
 * The names of `hints.forZones` or `hints.forNodes`. Entries without a name are dropped, as
 * before; a name the API server would refuse is dropped and reported (the endpoint then has
 * fewer hints, and one left with none makes topology fall back to every endpoint).
 */
function hintNames(list: unknown, path: string, rule: Validator, problems: ProblemList): ReadonlySet<string> {
  if (list === undefined || list === null) return NO_HINTS;
  if (!Array.isArray(list)) {
    problems.invalid(path, shownValue(list), "not a list; hints ignored");
    return NO_HINTS;
  }
  const names: string[] = [];
  for (const [i, h] of list.entries()) {
    const name = typeof h === "object" && h !== null ? (h as { name?: unknown }).name : undefined;
    if (name === undefined || name === null || name === "") continue;
    const bad = rule(name);
    if (bad) problems.invalid(`${path}[${i}].name`, shownValue(name), `${bad}; hint skipped`);
    else names.push(name as string);
  }
  return names.length === 0 ? NO_HINTS : new Set(names);
}

/** An optional name-like field: "" or absent is unset; anything else must pass `rule`. */
function optionalName(
  value: unknown,
  path: string,
  rule: Validator,
  problems: ProblemList,
): { ok: true; value: string } | { ok: false } {
  if (value === undefined || value === null || value === "") return { ok: true, value: "" };
  const bad = rule(value);
  if (!bad) return { ok: true, value: value as string };
  problems.invalid(path, shownValue(value), `${bad}; endpoint skipped`);
  return { ok: false };
}

export interface SliceContext {
  readonly family: IPFamily;
  readonly problems: ProblemList;
  /** Where wrong-family addresses are reported: upstream puts that event on the Service. */
  readonly serviceRef: ProblemList["ref"];
  /** This node's name: endpoints on it are local ("" or absent: none is). */
  readonly nodeName?: string;
}

function readEndpoint(raw: RawEndpoint, path: string, ctx: SliceContext): SliceEndpoint | undefined {
  if (typeof raw !== "object" || raw === null)
    return ctx.problems.invalid(path, shownValue(raw), "not an endpoint object; skipped");
  const address = Array.isArray(raw.addresses) ? raw.addresses[0] : undefined;
  if (address === undefined)
    return ctx.problems.note(`${path}.addresses`, shownValue(raw.addresses), "no address; endpoint skipped");
  const parsed = parseIPLenient(address);
  if (!parsed)
    return ctx.problems.invalid(
      `${path}.addresses[0]`,
      shownValue(address),
      "not an IP address; endpoint skipped",
    );
  if (parsed.family !== ctx.family) {
    const detail = `${address} in endpointslice has incorrect IP version; endpoint skipped`;
    ctx.problems.add({
      ref: ctx.serviceRef,
      field: `${path}.addresses[0]`,
      value: address,
      detail,
      eventReason: REASON_INCORRECT_IP_VERSION,
    });
    return undefined;
  }
  const nodeName = optionalName(raw.nodeName, `${path}.nodeName`, validNodeName, ctx.problems);
  if (!nodeName.ok) return undefined;
  const zone = optionalName(raw.zone, `${path}.zone`, validZoneName, ctx.problems);
  if (!zone.ok) return undefined;
  const hints: unknown = raw.hints;
  const hintObject = typeof hints === "object" && hints !== null ? (hints as Record<string, unknown>) : {};
  if (hints !== undefined && hints !== null && (typeof hints !== "object" || Array.isArray(hints)))
    ctx.problems.invalid(`${path}.hints`, shownValue(hints), "not an object; hints ignored");
  return {
    ip: parsed.ip,
    family: parsed.family,
    nodeName: nodeName.value,
    zone: zone.value,
    isLocal: nodeName.value !== "" && nodeName.value === ctx.nodeName,
    ...conditions(raw),
    zoneHints: hintNames(hintObject.forZones, `${path}.hints.forZones`, validZoneName, ctx.problems),
    nodeHints: hintNames(hintObject.forNodes, `${path}.hints.forNodes`, validNodeName, ctx.problems),
  };
}

function endpointFingerprint(e: SliceEndpoint): string {
  const flags = `${+e.ready}${+e.serving}${+e.terminating}`;
  const hints = `${[...e.zoneHints].sort().join(",")}|${[...e.nodeHints].sort().join(",")}`;
  return `${e.ip}|${e.nodeName}|${e.zone}|${flags}|${hints}`;
}

/** Above this length a fingerprint is kept as its digest: a slice of 20,000 ports spells ~340 KB. */
const LITERAL_FINGERPRINT_CHARS = 64;

// Kept with the slice: short text as it is (one flat string, the join made it so), longer text
// as a digest. A literal always holds a "#", a digest never, so the two cannot be confused.
function keptFingerprint(text: string): string {
  return text.length <= LITERAL_FINGERPRINT_CHARS ? text : sha256Base32Prefix(text, 48);
}

/** Parses the ports and endpoints of an IPv4 or IPv6 slice (the caller checked addressType). */
export function parseSlice(slice: EndpointSliceObject, ctx: SliceContext): ParsedSlice {
  const rawPorts = Array.isArray(slice.ports) ? slice.ports : [];
  const ports = rawPorts
    .map((p, i) => readSlicePort(p, `ports[${i}]`, ctx.problems))
    .filter((p): p is SlicePort => p !== undefined)
    .sort((a, b) => a.port - b.port || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const rawEndpoints = Array.isArray(slice.endpoints) ? slice.endpoints : [];
  const endpoints = rawEndpoints
    .map((e, i) => readEndpoint(e, `endpoints[${i}]`, ctx))
    .filter((e): e is SliceEndpoint => e !== undefined);
  const portPart = ports.map((p) => `${p.name}/${p.port}/${p.protocol}`).join(";");
  const epPart = endpoints.map(endpointFingerprint).sort().join(";");
  const fingerprint = keptFingerprint([portPart, epPart].join("#"));
  return { ports: new SlicePorts(ports), endpoints, fingerprint };
}

/** Parses the trigger-time annotation (RFC 3339, fraction optional); undefined when absent or bad. */
export function parseTriggerTime(value: unknown): Date | undefined {
  if (typeof value !== "string") return undefined;
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/i.exec(value);
  if (!m) return undefined;
  // Date parsing of more than 3 fraction digits differs between engines; keep milliseconds.
  const ms = (m[2] ?? "").slice(0, 3).padEnd(3, "0");
  const date = new Date(`${m[1]}.${ms}${m[3]!.toUpperCase()}`);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

// The API server's rules for the names kube-proxy reads from objects (k8s.io/apimachinery's
// IsDNS1123Label, IsDNS1123Subdomain, IsValidLabelValue and the per-kind rules built on them).
// kube-proxy never relies on the API server having applied them: --state files and hostile or
// broken servers deliver anything. Names become map keys ("ns/name:port") and reach logs and
// restore inputs, so a value these rules refuse is skipped where it is read.
//
// Every validator takes the raw field value (any JSON type) and returns undefined when it is
// valid, else the reason it is not. Lengths are checked before any pattern, so a megabyte-long
// value costs no more than a short one.

/** Longest DNS label, label value and the like. */
const LABEL_MAX = 63;
/** Longest DNS subdomain (RFC 1123). */
const SUBDOMAIN_MAX = 253;

const DNS1123_LABEL = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z](?:[-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(?:(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export type Validator = (value: unknown) => string | undefined;

function stringProblem(value: unknown): string | undefined {
  return typeof value === "string" ? undefined : `must be a string, not ${describeType(value)}`;
}

function describeType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function tooLong(value: string, max: number): string | undefined {
  return value.length > max ? `must be no more than ${max} characters (has ${value.length})` : undefined;
}

/** A validator for one kind of DNS label: a string of at most 63 characters matching `pattern`. */
function labelRule(pattern: RegExp, shape: string): Validator {
  return (value) => {
    const notString = stringProblem(value);
    if (notString) return notString;
    const s = value as string;
    if (s === "") return "must not be empty";
    return tooLong(s, LABEL_MAX) ?? (pattern.test(s) ? undefined : shape);
  };
}

/** RFC 1123 label: lower-case letters, digits and '-', starting and ending alphanumeric, ≤63. */
export const dns1123Label: Validator = labelRule(
  DNS1123_LABEL,
  "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit",
);

/** RFC 1035 label: as a DNS-1123 label, but starting with a letter. */
export const dns1035Label: Validator = labelRule(
  DNS1035_LABEL,
  "must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit",
);

/** RFC 1123 subdomain: dot-separated DNS-1123 labels, ≤253 in all. */
export const dns1123Subdomain: Validator = (value) => {
  const notString = stringProblem(value);
  if (notString) return notString;
  const s = value as string;
  if (s === "") return "must not be empty";
  const long = tooLong(s, SUBDOMAIN_MAX);
  if (long) return long;
  // Split rather than one pattern over the whole name: linear, however the dots fall. Labels
  // inside a subdomain are not limited to 63 characters here, as upstream's pattern does not.
  const ok = s.split(".").every((part) => DNS1123_LABEL.test(part));
  return ok
    ? undefined
    : "must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit";
};

/** A label value: empty, or ≤63 of letters, digits, '-', '_' and '.', starting and ending alphanumeric. */
export const labelValue: Validator = (value) => {
  const notString = stringProblem(value);
  if (notString) return notString;
  const s = value as string;
  return (
    tooLong(s, LABEL_MAX) ??
    (LABEL_VALUE.test(s)
      ? undefined
      : "must be a label value: letters, digits, '-', '_' and '.', starting and ending with a letter or digit")
  );
};

/** metadata.namespace of any namespaced object. */
export const validNamespace: Validator = dns1123Label;

/**
 * metadata.name of a Service. Upstream required a DNS-1035 label until RelaxedServiceNameValidation
 * (beta and on by default in 1.36, GA in 1.37) relaxed it to a DNS-1123 label; supported clusters
 * (1.35-1.37) may hold names starting with a digit, so the relaxed rule is the one that matches.
 */
export const validServiceName: Validator = dns1123Label;

/** metadata.name of an EndpointSlice. */
export const validEndpointSliceName: Validator = dns1123Subdomain;

/** metadata.name of a Node, and an endpoint's nodeName and forNodes hints (ValidateNodeName). */
export const validNodeName: Validator = dns1123Subdomain;

/** metadata.name of a ServiceCIDR. */
export const validServiceCIDRName: Validator = dns1123Subdomain;

/**
 * A Service port's name (ValidateService): a DNS-1123 label, or empty. Upstream also requires
 * a name when a Service has several ports; that is a rule about the list, not the name.
 */
export const validServicePortName: Validator = (value) => (value === "" ? undefined : dns1123Label(value));

/** An EndpointSlice port's name: a DNS-1123 label, or empty (as for Service ports). */
export const validEndpointPortName: Validator = validServicePortName;

/** The kubernetes.io/service-name label of an EndpointSlice names a Service. */
export const validServiceNameLabel: Validator = validServiceName;

/** An endpoint's zone and forZones hints: label values (they come from topology.kubernetes.io/zone). */
export const validZoneName: Validator = labelValue;

/** An endpoint's hostname: a DNS-1123 label. kube-proxy does not use it, so nothing checks it today. */
export const validHostname: Validator = dns1123Label;

/** Longest value text a report carries: hostile values can be megabytes long. */
const SHOWN_MAX = 80;

/**
 * A value cut down for logs and events. Strings over the limit keep their head and say how long
 * they were; lists and objects whose JSON is over the limit become such a text too.
 */
export function shownValue(value: unknown): unknown {
  if (typeof value === "string")
    return value.length <= SHOWN_MAX ? value : `${value.slice(0, SHOWN_MAX)}... (${value.length} characters)`;
  if (typeof value !== "object" || value === null) return value;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return describeType(value);
  }
  if (text === undefined || text.length <= SHOWN_MAX) return value;
  return `${text.slice(0, SHOWN_MAX)}... (${describeType(value)}, ${text.length} characters of JSON)`;
}

/** shownValue as text, for log fields: strings as they are, anything else as (cut) JSON. Never throws. */
export function shownText(value: unknown): string {
  const shown = shownValue(value);
  if (typeof shown === "string") return shown;
  try {
    return JSON.stringify(shown) ?? String(shown);
  } catch {
    // BigInts fail JSON; objects without a prototype fail String: say what it is instead.
    return typeof shown === "bigint" ? `${shown}n` : describeType(shown);
  }
}

// What the proxier remembers about one service port between syncs: its sources, names, and the
// rendered top-level rules. A partial sync reuses the rendered text of every port that
// did not change, so its cost grows with the change, not with the cluster.

import type { FamilyServicePort } from "../../proxy/family-view.ts";
import { familyView, usableEndpoints } from "../../proxy/family-view.ts";
import type { EndpointInfo, ServicePortInfo } from "../../proxy/types.ts";
import type { IPFamily } from "../../util/net/family.ts";
import type { DeferredLines } from "./line-blocks.ts";
import { ServicePortNames } from "./port-names.ts";

/** A port's nat lines: joined, or written only when read (see PortState.natText). */
export type NatText = string | DeferredLines;

/** The inputs of a port state, before rendering. */
export interface PortInputs {
  /** The objects this state was computed from; identity tells whether they changed. */
  readonly source: ServicePortInfo;
  readonly endpointsSource: readonly EndpointInfo[] | undefined;
  readonly view: FamilyServicePort;
  readonly endpoints: readonly EndpointInfo[];
  readonly names: ServicePortNames;
  /** "ns/name": the key the change trackers report. */
  readonly serviceKey: string;
  /** Endpoints of this family and protocol (upstream counts these for large-cluster mode). */
  readonly endpointCount: number;
}

/**
 * What is kept per port: its inputs (but the family view and the endpoint list, which a render
 * makes again; a state of its own stays per service port between syncs), plus the rendered
 * rules and what they imply.
 */
export interface PortState extends Omit<PortInputs, "view" | "endpoints"> {
  /**
   * Nat lines in KUBE-SERVICES / KUBE-NODEPORTS, joined ("" when none); or, for a port with more
   * of them than one restore entry holds (a Service with 100,000 externalIPs), what writes them
   * as the restore reads them: such a text is never kept.
   */
  readonly natText: NatText;
  readonly natLines: number;
  /** Rules in the port's own chains (counted for the rules metric even when not rewritten). */
  readonly chainRuleLines: number;
  readonly activeChains: readonly string[];
  /** Its filter lines and no-local drops; most ports have none and share NO_EXTRAS. */
  readonly extras: PortExtras;
}

/** What most ports do not have: filter lines, and a traffic policy that drops for want of local endpoints. */
export interface PortExtras {
  /** Filter lines in the top-level chains, joined ("" when none). */
  readonly filterText: string;
  readonly filterLines: number;
  readonly noLocalInternal: boolean;
  readonly noLocalExternal: boolean;
}

const NO_EXTRAS: PortExtras = {
  filterText: "",
  filterLines: 0,
  noLocalInternal: false,
  noLocalExternal: false,
};

/** `extras` itself, or the one shared record when it holds nothing. */
export function portExtras(extras: PortExtras): PortExtras {
  const none = extras.filterLines === 0 && !extras.noLocalInternal && !extras.noLocalExternal;
  return none ? NO_EXTRAS : extras;
}

/**
 * Resolves one service port for a family; undefined when the family does not serve it. Endpoints
 * whose slice port has another protocol belong to a different service port upstream, so they
 * are not used (`endpointProtocol` is the protocol the EndpointSlices gave).
 */
export function portInputs(
  source: ServicePortInfo,
  endpointsSource: readonly EndpointInfo[] | undefined,
  endpointProtocol: string | undefined,
  family: IPFamily,
  previous: PortState | undefined,
): PortInputs | undefined {
  const view = familyView(source, family);
  if (!view) return undefined;
  const endpoints = usableEndpoints(source, endpointsSource, endpointProtocol, family);
  const sameNames =
    previous && previous.names.nameString === source.id && previous.source.protocol === source.protocol;
  const names = sameNames ? previous.names : new ServicePortNames(source.id, source.protocol);
  names.followEndpoints(endpoints);
  const serviceKey = serviceKeyOf(source, previous);
  return { source, endpointsSource, view, endpoints, names, serviceKey, endpointCount: endpoints.length };
}

// The ports of one Service come one after another in a walk: they share one key string.
let lastKey = "";
let lastNamespace = "";
let lastName = "";

/** "ns/name" of the port's Service: the previous state's, or the one string its Service's ports share. */
function serviceKeyOf(source: ServicePortInfo, previous: PortState | undefined): string {
  if (previous) return previous.serviceKey;
  const { namespace, name } = source.name;
  if (namespace !== lastNamespace || name !== lastName) {
    lastKey = `${namespace}/${name}`;
    lastNamespace = namespace;
    lastName = name;
  }
  return lastKey;
}

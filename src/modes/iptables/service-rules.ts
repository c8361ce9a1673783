// The rules one service port adds to the shared top-level chains: the captures in nat
// KUBE-SERVICES / KUBE-NODEPORTS that send its traffic to its own chains, and the filter rules
// that reject, drop or accept what cannot (or need not) reach an endpoint. These chains are
// rewritten on every sync, partial or not.

import { bareComment, comment } from "../../host/iptables/restore-text.ts";
import type { FamilyServicePort } from "../../proxy/family-view.ts";
import {
  KUBE_EXTERNAL_SERVICES,
  KUBE_NODEPORTS,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
} from "../../proxy/netfilter/chains.ts";
import type { RuleLineSink } from "./port-lines.ts";
import type { ServicePortNames } from "./port-names.ts";
import type { ServicePlan } from "./service-plan.ts";

/** nfacct counter counting NodePort packets accepted on loopback addresses (upstream's name). */
export const LOCALHOST_NODEPORTS_COUNTER = "localhost_nps_accepted_pkts";

export interface EntryRuleSettings {
  /** Localhost NodePorts are enabled (IPv4 only) and the nfacct counter for them is usable. */
  readonly countLocalhostNodePorts: boolean;
}

/** Lines for one service port, one sink per table; both are appended to, never reset here. */
export interface EntryRuleSink {
  readonly filter: RuleLineSink;
  readonly nat: RuleLineSink;
}

/** "-m tcp -p tcp -d IP --dport N": the destination match shared by most captures. */
function dest(protocol: string, ip: string, port: number): string {
  return `-m ${protocol} -p ${protocol} -d ${ip} --dport ${port}`;
}

/** What precedes the address in a capture of `protocol` traffic to one address of a list. */
function listHead(chain: string, text: string, protocol: string): string {
  return `-A ${chain} -m comment --comment ${text} -m ${protocol} -p ${protocol} -d `;
}

/** What follows the address: the port and the jump. */
function listTail(port: number, target: string): string {
  return ` --dport ${port} -j ${target}`;
}

function writeClusterIPCapture(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  out: EntryRuleSink,
) {
  const match = dest(names.protocol, svc.clusterIP, svc.port);
  if (plan.hasInternalEndpoints) {
    const text = comment(`${names.nameString} cluster IP`);
    out.nat.push(`-A ${KUBE_SERVICES} -m comment --comment ${text} ${match} -j ${plan.internalTrafficChain}`);
  } else if (plan.internalFilter) {
    const { comment: text, target } = plan.internalFilter;
    out.filter.push(`-A ${KUBE_SERVICES} -m comment --comment ${text} ${match} -j ${target}`);
  }
}

function writeExternalIPCaptures(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  out: EntryRuleSink,
) {
  if (svc.externalIPs.length === 0) return;
  const p = names.protocol;
  // Each table's lines keep the order of the list (one line per IP).
  if (plan.hasEndpoints) {
    const text = comment(`${names.nameString} external IP`);
    out.nat.pushEach(listHead(KUBE_SERVICES, text, p), svc.externalIPs, listTail(svc.port, names.chains.ext));
  }
  // Either nothing to serve (REJECT) or only pod/host traffic the EXT chain short-circuits.
  const f = plan.externalFilter;
  if (f)
    out.filter.pushEach(
      listHead(KUBE_EXTERNAL_SERVICES, f.comment, p),
      svc.externalIPs,
      listTail(svc.port, f.target),
    );
}

function writeLoadBalancerCaptures(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  out: EntryRuleSink,
) {
  const vips = svc.loadBalancerVIPs;
  if (vips.length === 0) return;
  const p = names.protocol;
  if (plan.hasEndpoints) {
    const lbComment = comment(`${names.nameString} loadbalancer IP`);
    out.nat.pushEach(
      listHead(KUBE_SERVICES, lbComment, p),
      vips,
      listTail(svc.port, plan.loadBalancerTrafficChain),
    );
  }
  // What the KUBE-FW- chain did not accept arrives here un-DNATed.
  if (plan.usesFirewallChain) {
    const fwComment = comment(`${names.nameString} traffic not accepted by ${names.chains.fw}`);
    out.filter.pushEach(listHead(KUBE_PROXY_FIREWALL, fwComment, p), vips, listTail(svc.port, "DROP"));
  }
  const f = plan.externalFilter;
  if (f)
    out.filter.pushEach(listHead(KUBE_EXTERNAL_SERVICES, f.comment, p), vips, listTail(svc.port, f.target));
}

function writeNodePortCaptures(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  settings: EntryRuleSettings,
  out: EntryRuleSink,
) {
  if (svc.nodePort === 0) return;
  const p = names.protocol;
  if (plan.hasEndpoints) {
    // NodePorts bypass loadBalancerSourceRanges (upstream behaviour that cannot change now).
    const head = `-A ${KUBE_NODEPORTS} -m comment --comment ${bareComment(names.nameString)} -m ${p} -p ${p}`;
    if (settings.countLocalhostNodePorts) {
      out.nat.push(
        `${head} -d 127.0.0.0/8 --dport ${svc.nodePort} -m nfacct --nfacct-name ${LOCALHOST_NODEPORTS_COUNTER} -j ${names.chains.ext}`,
      );
    }
    out.nat.push(`${head} --dport ${svc.nodePort} -j ${names.chains.ext}`);
  }
  const f = plan.externalFilter;
  if (f) {
    out.filter.push(
      `-A ${KUBE_EXTERNAL_SERVICES} -m comment --comment ${f.comment} -m addrtype --dst-type LOCAL -m ${p} -p ${p} --dport ${svc.nodePort} -j ${f.target}`,
    );
  }
}

function writeHealthCheckAccept(svc: FamilyServicePort, names: ServicePortNames, out: EntryRuleSink) {
  if (svc.healthCheckNodePort === 0) return;
  // Accepted whether or not this node has local endpoints: the answer itself is the signal.
  const text = comment(`${names.nameString} health check node port`);
  out.filter.push(
    `-A ${KUBE_NODEPORTS} -m comment --comment ${text} -m tcp -p tcp --dport ${svc.healthCheckNodePort} -j ACCEPT`,
  );
}

/** All top-level rules of one service port, in upstream's order. */
export function writeEntryRules(
  svc: FamilyServicePort,
  names: ServicePortNames,
  plan: ServicePlan,
  settings: EntryRuleSettings,
  out: EntryRuleSink,
): void {
  writeClusterIPCapture(svc, names, plan, out);
  writeExternalIPCaptures(svc, names, plan, out);
  writeLoadBalancerCaptures(svc, names, plan, out);
  writeNodePortCaptures(svc, names, plan, settings, out);
  writeHealthCheckAccept(svc, names, out);
}

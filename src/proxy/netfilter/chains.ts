// The chains every kube-proxy mode that writes iptables rules shares with upstream (the
// iptables mode and the ipvs mode's small rule set): their names, byte for byte, and the
// restore-text helpers for chain declarations.

import { chainName } from "../../host/iptables/restore-text.ts";

/** Top-level chains (nat and/or filter), as upstream names them. */
export const KUBE_SERVICES = "KUBE-SERVICES";
export const KUBE_EXTERNAL_SERVICES = "KUBE-EXTERNAL-SERVICES";
export const KUBE_NODEPORTS = "KUBE-NODEPORTS";
export const KUBE_POSTROUTING = "KUBE-POSTROUTING";
export const KUBE_MARK_MASQ = "KUBE-MARK-MASQ";
export const KUBE_FORWARD = "KUBE-FORWARD";
export const KUBE_PROXY_FIREWALL = "KUBE-PROXY-FIREWALL";
export const KUBE_PROXY_CANARY = "KUBE-PROXY-CANARY";
/** kubelet's chain; we keep its "block incoming localnet connections" rule in place. */
export const KUBE_FIREWALL = "KUBE-FIREWALL";

/**
 * The restore line that creates (or, with --noflush, flushes) a chain. Every chain a sync
 * writes to is declared here, so this is where a name iptables would not take is refused.
 */
export function chainLine(chain: string): string {
  return `:${chainName(chain)} - [0:0]`;
}

/** Chain names declared in iptables-save output for one table (lines like ":NAME POLICY [p:b]"). */
export function chainsInSave(saveOutput: string): string[] {
  return [...chainNamesInSave(saveOutput)];
}

/**
 * chainsInSave, one name at a time as it is read: a caller that keeps a few of 100,000 names
 * (the stale ones) never holds them all, nor the output split into lines.
 */
export function* chainNamesInSave(saveOutput: string): Generator<string> {
  for (let at = 0; at < saveOutput.length; ) {
    let nl = saveOutput.indexOf("\n", at);
    if (nl < 0) nl = saveOutput.length;
    if (saveOutput.charCodeAt(at) === 58 /* ":" */) {
      const space = saveOutput.indexOf(" ", at);
      yield saveOutput.slice(at + 1, space < 0 || space > nl ? nl : space);
    }
    at = nl + 1;
  }
}

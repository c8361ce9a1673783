// Masquerading as every mode does it: a packet to be SNATed is marked (KUBE-MARK-MASQ) and
// masqueraded on its way out (KUBE-POSTROUTING), with upstream's mark text.

import { comment } from "../../host/iptables/restore-text.ts";
import { KUBE_MARK_MASQ, KUBE_POSTROUTING } from "./chains.ts";

const SNAT_COMMENT = comment("kubernetes service traffic requiring SNAT");

/** The mark as upstream formats it with Go's "%#08x": eight hex digits after "0x". */
export function masqueradeMark(bit: number): string {
  return `0x${(2 ** bit).toString(16).padStart(8, "0")}`;
}

/** KUBE-POSTROUTING and KUBE-MARK-MASQ: mark in one place, masquerade (once) on the way out. */
export function masqueradeRules(mark: string, randomFully: boolean): string[] {
  return [
    `-A ${KUBE_POSTROUTING} -m mark ! --mark ${mark}/${mark} -j RETURN`,
    // Clearing the mark keeps a packet that traverses the stack again from being re-masqueraded.
    `-A ${KUBE_POSTROUTING} -j MARK --xor-mark ${mark}`,
    `-A ${KUBE_POSTROUTING} -m comment --comment ${SNAT_COMMENT} -j MASQUERADE${randomFully ? " --random-fully" : ""}`,
    `-A ${KUBE_MARK_MASQ} -j MARK --or-mark ${mark}`,
  ];
}

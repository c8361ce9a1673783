// Jumps from the kernel's built-in chains into ours: each mode lists its own, and ensures
// (or, on cleanup, deletes) them with these arguments.

import { commentText } from "../../host/iptables/restore-text.ts";
import type { Table } from "../../host/iptables/types.ts";

export interface JumpChain {
  readonly table: Table;
  readonly dstChain: string;
  readonly srcChain: string;
  /** "" for kubelet's chains, which carry no comment. */
  readonly comment: string;
  readonly extraArgs: readonly string[];
}

/** The rule arguments of a jump, as passed to ensureRule / deleteRule. */
export function jumpRuleArgs(j: JumpChain): string[] {
  const args = [...j.extraArgs];
  // An argument needs no quoting, but the kernel's byte limit holds all the same.
  if (j.comment !== "") args.push("-m", "comment", "--comment", commentText(j.comment));
  args.push("-j", j.dstChain);
  return args;
}

// The dry run of `kube-proxy-ts --dry-run` run in this process the way the daemon syncs (its
// garbage collections on), with every planned input read through once as the kernel tool would
// read it, its bytes and lines counted, and none of it kept, and neither the Service listing nor
// a mode's own listing made: the peak RSS of this process is then the sync's own working set,
// without what only a dry run holds (the record of the inputs, the listings, the report). Prints
// {"rulesBytes": N, "rulesLines": L} on stdout; what is left of the report goes nowhere.
// bench-objects --sync-only runs it.
//
//   node_modules/.bin/bun scripts/sync-memory.ts --dry-run --mode=iptables --state=FILE ...

import { readFileSync, writeSync } from "node:fs";
import { run } from "../src/app/run.ts";
import { PlanProxier } from "../src/dryrun/plan-proxier.ts";
import { DryRunRecorder, isReadOnlyCommand } from "../src/exec/dry-run.ts";
import type { Exec, ExecRequest, ExecResult } from "../src/exec/types.ts";
import { MODES } from "../src/modes/registry.ts";
import { enableGarbageCollections } from "../src/runtime.ts";

let rulesBytes = 0;
let rulesLines = 0;

/** Newlines in `piece`: each ends one line of a restore input. */
function newlines(piece: string): number {
  let n = 0;
  for (let at = piece.indexOf("\n"); at >= 0; at = piece.indexOf("\n", at + 1)) n++;
  return n;
}

DryRunRecorder.prototype.run = async function (this: DryRunRecorder, req: ExecRequest): Promise<ExecResult> {
  if (isReadOnlyCommand(req)) return (this as unknown as { inner: Exec }).inner.run(req);
  if (req.stdin !== undefined) {
    for (const piece of typeof req.stdin === "string" ? [req.stdin] : req.stdin) {
      rulesBytes += Buffer.byteLength(piece, "utf8");
      rulesLines += newlines(piece);
    }
  }
  this.commands.push({ argv: [req.cmd, ...req.args] });
  return { code: 0, stdout: "", stderr: "" };
};

// The report's parts a daemon never makes: no mode's own listing (ipvs' virtual servers)...
for (const mode of MODES) (mode as { dryRunReport?: unknown }).dryRunReport = undefined;

// ...and no listing of every service port and endpoint.
PlanProxier.prototype.sync = async function (this: PlanProxier): Promise<void> {
  this.syncs++;
};

enableGarbageCollections();
const code = await run(process.argv.slice(2), {
  stdout: () => {},
  stderr: (t) => process.stderr.write(t),
  readFile: (p) => readFileSync(p, "utf8"),
});
writeSync(1, `${JSON.stringify({ rulesBytes, rulesLines })}\n`);
process.exitCode = code;

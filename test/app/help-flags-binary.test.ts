// `dist/kube-proxy-ts --help` lists exactly the flags upstream kube-proxy v1.31 prints on Linux,
// plus the kube-proxy-ts ones (test/support/upstream-flags.ts has both lists and their source).
import { describe, expect, test } from "bun:test";
import { runBinary } from "../support/binary.ts";
import { KUBE_PROXY_TS_ONLY_FLAGS, UPSTREAM_V1_31_HELP_FLAGS } from "../support/upstream-flags.ts";

/** Every long flag name --help prints at the start of a flag line ("  -v, --v int", "      --config string"). */
function helpFlags(help: string): string[] {
  const names: string[] = [];
  for (const line of help.split("\n")) {
    const m = /^ {2}(?:-\w, | {4})--([a-z0-9][a-z0-9-]*)/.exec(line);
    if (m?.[1]) names.push(m[1]);
    // A second name on the same line would be an alias that upstream does not have.
    if (m && /^ {2}(?:-\w, | {4})--[a-z0-9-]+, --/.test(line)) names.push(`alias on: ${line.trim()}`);
  }
  return names.sort();
}

describe("dist/kube-proxy-ts --help", () => {
  test("lists upstream v1.31's flags and the kube-proxy-ts ones, nothing else", () => {
    const r = runBinary(["--help"]);
    expect(r.code).toBe(0);
    expect(helpFlags(r.stdout)).toEqual([...UPSTREAM_V1_31_HELP_FLAGS, ...KUBE_PROXY_TS_ONLY_FLAGS].sort());
  });

  test("lists the feature gates it knows, the way upstream's --feature-gates help does", () => {
    const r = runBinary(["--help"]);
    expect(r.stdout).toContain("ComponentStatusz=true|false (BETA - default=true)");
    expect(r.stdout).toContain("AllBeta=true|false (BETA - default=false)");
  });
});

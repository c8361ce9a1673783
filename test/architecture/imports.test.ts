// The import rules of src/, checked on every test run: layers only import downward, a mode
// never imports another mode (nor the registry that lists them), and production code never
// imports a fake (fakes live in testing/ folders, for tests only). `violations()` is exported
// so the rules can be tried on a planted violation.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

const SRC = join(import.meta.dir, "..", "..", "src");

/**
 * Top to bottom. A file may import its own layer and any layer below it. Entries are folders
 * of src/ or single files of it.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ["main.ts"],
  ["app"],
  ["cli"],
  ["dryrun"],
  ["modes"],
  ["proxy"],
  ["config"],
  ["k8s"],
  ["host"],
  ["exec"],
  ["log", "util", "generated", "runtime.ts", "version.ts"],
];

export interface Import {
  /** Importing file, relative to src/. */
  readonly from: string;
  /** Imported file, relative to src/ (may lie outside it: "../x"). */
  readonly to: string;
}

function layerOf(path: string): number {
  const top = path.split("/")[0] ?? path;
  const i = LAYERS.findIndex((l) => l.includes(top));
  if (i < 0) throw new Error(`src/${path} belongs to no layer: add its folder to LAYERS`);
  return i;
}

/** "iptables" for src/modes/iptables/..., undefined for src/modes/registry.ts and others. */
function modeOf(path: string): string | undefined {
  const parts = path.split("/");
  return parts[0] === "modes" && parts.length > 2 ? parts[1] : undefined;
}

const isTesting = (path: string) => path.split("/").includes("testing");
const isFake = (path: string) => isTesting(path) || /(^|\/)[^/]*fake[^/]*\.ts$/.test(path);

/** Every rule an import breaks, as sentences. */
export function violations(imports: readonly Import[]): string[] {
  const out: string[] = [];
  for (const { from, to } of imports) {
    if (to.startsWith("..")) {
      out.push(`${from} imports ${to}, outside src/`);
      continue;
    }
    const [a, b] = [layerOf(from), layerOf(to)];
    if (b < a)
      out.push(`${from} imports ${to}: layer ${LAYERS[a]} may not import the higher layer ${LAYERS[b]}`);
    const [ma, mb] = [modeOf(from), modeOf(to)];
    if (ma && mb && ma !== mb) out.push(`${from} imports ${to}: mode ${ma} may not import mode ${mb}`);
    if (ma && to === "modes/registry.ts")
      out.push(`${from} imports the registry: a mode may not know the others`);
    if (isFake(to) && !isFake(from)) out.push(`${from} imports the fake ${to}: production code may not`);
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (name.endsWith(".ts")) out.push(p);
  }
  return out;
}

const SPECIFIER =
  /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)/g;

/** The relative imports of every file under src/. */
export function srcImports(): Import[] {
  const out: Import[] = [];
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(SPECIFIER)) {
      const spec = m[1] ?? m[2] ?? "";
      if (!spec.startsWith(".")) continue;
      const from = relative(SRC, file);
      out.push({ from, to: normalize(join(dirname(from), spec)) });
    }
  }
  return out;
}

describe("import rules of src/", () => {
  const imports = srcImports();

  test("the scan finds the imports (a sanity check of the parser)", () => {
    expect(imports.length).toBeGreaterThan(500);
    expect(imports).toContainEqual({ from: "modes/registry.ts", to: "modes/iptables/mode.ts" });
  });

  test("no file breaks a rule", () => {
    expect(violations(imports)).toEqual([]);
  });

  test("each rule catches a planted violation", () => {
    expect(violations([{ from: "modes/ipvs/proxier.ts", to: "modes/iptables/chains.ts" }])).toEqual([
      "modes/ipvs/proxier.ts imports modes/iptables/chains.ts: mode ipvs may not import mode iptables",
    ]);
    expect(violations([{ from: "proxy/family-view.ts", to: "modes/types.ts" }])[0]).toContain(
      "may not import the higher layer modes",
    );
    expect(violations([{ from: "host/ipset/client.ts", to: "exec/testing/fake.ts" }])[0]).toContain(
      "production code may not",
    );
    expect(violations([{ from: "modes/ipvs/mode.ts", to: "modes/registry.ts" }])[0]).toContain(
      "a mode may not know the others",
    );
  });
});

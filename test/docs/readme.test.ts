import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { withFlagReference } from "../../scripts/gen-readme.ts";
import { FLAGS } from "../../src/cli/flags.ts";

describe("README", () => {
  const readme = readFileSync("README.md", "utf8");

  test("the flag reference is the one generated from the flag table (run: bun scripts/gen-readme.ts)", () => {
    expect(withFlagReference(readme)).toBe(readme);
  });

  test("every visible flag appears in the reference", () => {
    for (const f of FLAGS.filter((f) => !f.hidden)) expect(readme).toContain(`--${f.name}`);
  });

  test("the quick start is exactly the two commands", () => {
    const quick = readme.split("## Quick start")[1]?.split("```sh")[1]?.split("```")[0] ?? "";
    const commands = quick
      .split("\n")
      .map((l) => l.replace(/#.*/, "").trim())
      .filter(Boolean);
    expect(commands).toEqual(["npm run demo", "npm test"]);
  });
});

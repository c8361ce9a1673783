// Regenerates the flag reference in README.md from the flag table (src/cli), between markers.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { renderFlagReferenceMarkdown } from "../src/cli/index.ts";

const BEGIN = "<!-- flags:begin -->";
const END = "<!-- flags:end -->";

export function withFlagReference(readme: string): string {
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error("README.md lacks the flags:begin/flags:end markers");
  return `${readme.slice(0, start + BEGIN.length)}\n${renderFlagReferenceMarkdown().trim()}\n${readme.slice(end)}`;
}

if (import.meta.main) {
  const path = join(dirname(fileURLToPath(import.meta.url)), "..", "README.md");
  writeFileSync(path, withFlagReference(readFileSync(path, "utf8")));
}

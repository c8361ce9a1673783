// Reads files from test/fixtures/config for the config and cli tests.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export function fixturePath(name: string): string {
  return fileURLToPath(new URL(`../fixtures/config/${name}`, import.meta.url));
}

export function fixture(name: string): string {
  return readFileSync(fixturePath(name), "utf8");
}

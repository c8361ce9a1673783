// The writer behind --dump-state and --write-config-to: mode 0600, atomic, never through a
// symlink, nothing left behind on failure. The last tests run the built binary.
import { describe, expect, test } from "bun:test";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { writePrivateFileSync } from "../../src/app/private-file.ts";
import { runBinary, tempDir } from "../support/binary.ts";

const mode = (path: string) => statSync(path).mode & 0o777;

describe("writePrivateFileSync", () => {
  test("a new file gets mode 0600 and the whole content, with no temporary file left", () => {
    const dir = tempDir();
    const file = join(dir, "out.yaml");
    writePrivateFileSync(file, "a: 1\n");
    expect(readFileSync(file, "utf8")).toBe("a: 1\n");
    expect(mode(file)).toBe(0o600);
    expect(readdirSync(dir)).toEqual(["out.yaml"]);
  });

  test("an existing readable file is replaced by a 0600 one", () => {
    const dir = tempDir();
    const file = join(dir, "out.yaml");
    writeFileSync(file, "old\n", { mode: 0o644 });
    writePrivateFileSync(file, new TextEncoder().encode("new\n"));
    expect(readFileSync(file, "utf8")).toBe("new\n");
    expect(mode(file)).toBe(0o600);
  });

  test("a symlink at the target is replaced, not written through: its target is untouched", () => {
    const dir = tempDir();
    const victim = join(dir, "victim");
    writeFileSync(victim, "precious\n", { mode: 0o644 });
    const link = join(dir, "out.yaml");
    symlinkSync(victim, link);
    writePrivateFileSync(link, "dump\n");
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(mode(victim)).toBe(0o644);
    expect(lstatSync(link).isSymbolicLink()).toBe(false);
    expect(readFileSync(link, "utf8")).toBe("dump\n");
    expect(mode(link)).toBe(0o600);
  });

  test("a dangling symlink is not followed either: nothing is created where it points", () => {
    const dir = tempDir();
    const target = join(dir, "created-through-link");
    const link = join(dir, "out.yaml");
    symlinkSync(target, link);
    writePrivateFileSync(link, "dump\n");
    expect(existsSync(target)).toBe(false);
    expect(readFileSync(link, "utf8")).toBe("dump\n");
  });

  test("on failure nothing partial is left: a directory in the way", () => {
    const dir = tempDir();
    const target = join(dir, "out.yaml");
    mkdirSync(target);
    expect(() => writePrivateFileSync(target, "x".repeat(1 << 20))).toThrow();
    expect(readdirSync(dir)).toEqual(["out.yaml"]);
    expect(statSync(target).isDirectory()).toBe(true);
    expect(readdirSync(target)).toEqual([]);
  });

  test("on failure nothing partial is left: a missing directory", () => {
    const dir = tempDir();
    expect(() => writePrivateFileSync(join(dir, "no", "out.yaml"), "x")).toThrow();
    expect(readdirSync(dir)).toEqual([]);
  });

  test("the old file stays whole when the new one cannot be put in place", () => {
    const dir = tempDir();
    const sub = join(dir, "sub");
    mkdirSync(sub);
    writeFileSync(join(sub, "keep"), "x");
    // rename() onto a non-empty directory fails after the temporary file is fully written.
    expect(() => writePrivateFileSync(sub, "replacement")).toThrow();
    expect(readFileSync(join(sub, "keep"), "utf8")).toBe("x");
    expect(readdirSync(dir)).toEqual(["sub"]);
  });
});

describe("the binary's --write-config-to and --dump-state", () => {
  test("--write-config-to onto a symlink: a 0600 file replaces the link, the link's target untouched", () => {
    const dir = tempDir();
    const victim = join(dir, "victim");
    writeFileSync(victim, "precious\n");
    const out = join(dir, "config.yaml");
    symlinkSync(victim, out);
    const r = runBinary([`--write-config-to=${out}`]);
    expect(r.code).toBe(0);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(lstatSync(out).isSymbolicLink()).toBe(false);
    expect(mode(out)).toBe(0o600);
    expect(readFileSync(out, "utf8")).toContain("kind: KubeProxyConfiguration");
  });

  test("--write-config-to that cannot be written exits 1 with the reason, no stack trace", () => {
    const dir = tempDir();
    const r = runBinary([`--write-config-to=${join(dir, "missing", "config.yaml")}`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("Could not write the effective configuration");
    expect(r.stderr).not.toMatch(/^\s+at /m);
  });

  test("--dump-state from a dry run: mode 0600, through no symlink", () => {
    const dir = tempDir();
    const victim = join(dir, "victim");
    writeFileSync(victim, "precious\n");
    const dump = join(dir, "dump.yaml");
    symlinkSync(victim, dump);
    const r = runBinary(["--dry-run", "--output=json", `--dump-state=${dump}`]);
    expect(r.stderr).toContain("Wrote cluster and host state");
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(mode(dump)).toBe(0o600);
    expect(readFileSync(dump, "utf8")).toContain("kind: Service");
  });
});

// The --config watch on its own, against real files: a change of content (in place, by an
// editor's rename-replace, or by a ConfigMap-style symlink swap) or a vanished file is reported
// once; rewriting the same content or touching the file is not.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ConfigChange, type ConfigWatch, watchConfigFile } from "../../src/app/config-watch.ts";
import { tempDir } from "../support/binary.ts";

const TEXT = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\n";
const OTHER = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\n";
const POLL_MS = 20;

const watches: ConfigWatch[] = [];
afterEach(() => {
  for (const w of watches.splice(0)) w.stop();
});

function watch(path: string, initial = TEXT): ConfigWatch {
  const w = watchConfigFile({ path, initial, intervalMs: POLL_MS });
  watches.push(w);
  return w;
}

/** The change reported within `ms`, or "none". */
function within(w: ConfigWatch, ms: number): Promise<ConfigChange | "none"> {
  return Promise.race([w.changed, new Promise<"none">((r) => setTimeout(() => r("none"), ms))]);
}

function configFile(text = TEXT): { dir: string; path: string } {
  const dir = tempDir("kpts-watch-");
  const path = join(dir, "config.yaml");
  writeFileSync(path, text);
  return { dir, path };
}

describe("config file watch", () => {
  test("nothing is reported while the content stays the same (rewrites and touches included)", async () => {
    const { path } = configFile();
    const w = watch(path);
    writeFileSync(path, TEXT);
    utimesSync(path, new Date(), new Date(Date.now() + 5000));
    expect(await within(w, 20 * POLL_MS)).toBe("none");
  });

  test("new content written in place is reported", async () => {
    const { path } = configFile();
    const w = watch(path);
    writeFileSync(path, OTHER);
    expect(await within(w, 5000)).toMatchObject({ kind: "changed" });
  });

  test("same size, different content is still a change", async () => {
    const { path } = configFile();
    const w = watch(path);
    writeFileSync(path, TEXT.replace("iptables", "iptablez"));
    expect(await within(w, 5000)).toEqual({ kind: "changed", detail: "new content" });
  });

  test("an editor's write-then-rename is reported", async () => {
    const { dir, path } = configFile();
    const w = watch(path);
    writeFileSync(join(dir, ".config.yaml.swp"), OTHER);
    renameSync(join(dir, ".config.yaml.swp"), path);
    expect(await within(w, 5000)).toMatchObject({ kind: "changed" });
  });

  test("a ConfigMap-style symlink swap counts only when the content differs", async () => {
    const dir = tempDir("kpts-watch-");
    for (const [name, text] of [
      ["v1", TEXT],
      ["v2", TEXT],
      ["v3", OTHER],
    ] as const) {
      mkdirSync(join(dir, name));
      writeFileSync(join(dir, name, "config.yaml"), text);
    }
    const swapTo = (name: string) => {
      symlinkSync(name, join(dir, "..data_tmp"));
      renameSync(join(dir, "..data_tmp"), join(dir, "..data"));
    };
    swapTo("v1");
    symlinkSync("..data/config.yaml", join(dir, "config.yaml"));
    const w = watch(join(dir, "config.yaml"));
    swapTo("v2");
    rmSync(join(dir, "v1"), { recursive: true });
    expect(await within(w, 20 * POLL_MS)).toBe("none");
    swapTo("v3");
    expect(await within(w, 5000)).toMatchObject({ kind: "changed" });
  });

  test("bytes that are not UTF-8 compare as they were loaded, not as a change", async () => {
    const { path } = configFile();
    const bytes = Buffer.concat([Buffer.from(TEXT), Buffer.from([0xff, 0xfe, 0x0a])]);
    writeFileSync(path, bytes);
    const w = watch(path, bytes.toString("utf8"));
    expect(await within(w, 10 * POLL_MS)).toBe("none");
  });

  test("a file grown far past the original is a change without reading it", async () => {
    const { path } = configFile();
    const w = watch(path);
    writeFileSync(path, TEXT + "#".repeat(200_000));
    expect(await within(w, 5000)).toEqual({ kind: "changed", detail: "grew to 200089 bytes" });
  });

  test("a vanished file is reported as gone", async () => {
    const { path } = configFile();
    const w = watch(path);
    rmSync(path);
    expect(await within(w, 5000)).toEqual({ kind: "gone", detail: "ENOENT" });
  });

  test("a stopped watch reports nothing", async () => {
    const { path } = configFile();
    const w = watch(path);
    w.stop();
    writeFileSync(path, OTHER);
    expect(await within(w, 10 * POLL_MS)).toBe("none");
  });
});

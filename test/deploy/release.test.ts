// scripts/release on a fresh clone of the committed tree: it writes the binary (and, with the
// image builder, the image archive) and SHA256SUMS into dist/release, the sums verify, the
// released binary's --version names the version and the clone's commit, and a dirty tree is
// refused. It tests what is committed: uncommitted edits to scripts/release are not in the clone.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import {
  appendFileSync,
  existsSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
} from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/binary.ts";

/**
 * The one switch for the image step. false while scripts/build-image is not committed: the clone
 * has no image builder, so the release runs with KPTS_RELEASE_IMAGE=skip. Set it to true once
 * scripts/build-image is on this branch; then the release builds the image too (it needs podman)
 * unless KPTS_RELEASE_TEST_IMAGE=0.
 */
const IMAGE_BUILDER_COMMITTED = true;
const WITH_IMAGE = IMAGE_BUILDER_COMMITTED && process.env.KPTS_RELEASE_TEST_IMAGE !== "0";

const REPO = join(import.meta.dir, "..", "..");
const VERSION = `v${JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")).version}`;
const BINARY = `kube-proxy-ts-${VERSION}-linux-amd64`;
const IMAGE = `kube-proxy-ts-${VERSION}-image-linux-amd64.tar`;
const TIMEOUT_MS = 15 * 60_000;

function git(cwd: string, ...args: string[]): string {
  const r = spawnSync("git", args, { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout.trim();
}

function release(cwd: string, extraEnv: Record<string, string> = {}): SpawnSyncReturns<string> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    KPTS_RELEASE_IMAGE: WITH_IMAGE ? "build" : "skip",
    // This suite is what the release would run first; running it again inside would recurse.
    KPTS_RELEASE_TESTS: "skip",
    // The image goes into a podman store this test owns (deleted with the clone).
    KPTS_PODMAN_ROOT: join(cwd, "..", "podman"),
  };
  delete env.KPTS_RELEASE_ALLOW_DIRTY;
  Object.assign(env, extraEnv);
  return spawnSync("bash", ["scripts/release"], {
    cwd,
    env,
    encoding: "utf8",
    timeout: TIMEOUT_MS,
    maxBuffer: 64 * 1024 * 1024,
  });
}

describe("scripts/release on a fresh clone", () => {
  let clone = "";
  let out = "";
  let commit = "";
  let run: SpawnSyncReturns<string> | undefined;

  beforeAll(() => {
    clone = join(tempDir("kpts-release-"), "kube-proxy-ts");
    git(REPO, "clone", "-q", REPO, clone);
    git(clone, "checkout", "-q", "--detach", git(REPO, "rev-parse", "HEAD"));
    // node_modules is gitignored, so linking the repo's keeps the clone clean. The lock file's
    // fresh checkout time would make scripts/ensure-deps run npm install through the link;
    // the linked packages are the ones installed from it, so give it their time.
    const modules = realpathSync(join(REPO, "node_modules"));
    symlinkSync(modules, join(clone, "node_modules"));
    const installed = statSync(join(modules, ".package-lock.json"));
    utimesSync(join(clone, "package-lock.json"), installed.atime, installed.mtime);
    commit = git(clone, "rev-parse", "--short=12", "HEAD");
    out = join(clone, "dist", "release");
    run = release(clone);
    if (run.status !== 0) {
      throw new Error(`scripts/release exited ${run.status}:\n${run.stderr}\n${run.stdout}`);
    }
  }, TIMEOUT_MS);

  afterAll(() => {
    if (clone) rmSync(join(clone, ".."), { recursive: true, force: true });
  });

  test("the clone is at the repo's HEAD and the image builder is there exactly when the switch says", () => {
    expect(git(REPO, "rev-parse", "--short=12", "HEAD")).toBe(commit);
    // If this fails because scripts/build-image now exists: set IMAGE_BUILDER_COMMITTED = true.
    expect(existsSync(join(clone, "scripts", "build-image"))).toBe(IMAGE_BUILDER_COMMITTED);
  });

  test("dist/release holds the binary, the image archive (unless skipped) and SHA256SUMS", () => {
    const expected = WITH_IMAGE ? [BINARY, IMAGE, "SHA256SUMS"] : [BINARY, "SHA256SUMS"];
    expect(readdirSync(out).sort()).toEqual(expected.sort());
    expect(statSync(join(out, BINARY)).mode & 0o111).toBe(0o111);
    if (WITH_IMAGE) expect(statSync(join(out, IMAGE)).size).toBeGreaterThan(0);
    else expect(run?.stderr).toContain("KPTS_RELEASE_IMAGE=skip: no image archive");
  });

  test("SHA256SUMS lists every artifact by relative name, sorted, and sha256sum -c verifies it", () => {
    const lines = readFileSync(join(out, "SHA256SUMS"), "utf8").trimEnd().split("\n");
    const names = lines.map((l) => {
      const m = /^[0-9a-f]{64} {2}(\S+)$/.exec(l);
      if (!m?.[1]) throw new Error(`not a sha256sum line: ${l}`);
      return m[1];
    });
    expect(names).toEqual(
      readdirSync(out)
        .filter((n) => n !== "SHA256SUMS")
        .sort(),
    );
    const check = spawnSync("sha256sum", ["-c", "SHA256SUMS"], { cwd: out, encoding: "utf8" });
    expect(check.stderr).toBe("");
    expect(check.status).toBe(0);
  });

  test("the released binary's --version prints the version and the clone's commit, not -dirty", () => {
    const r = spawnSync(join(out, BINARY), ["--version"], { encoding: "utf8", timeout: 30_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`kube-proxy-ts ${VERSION} `);
    expect(r.stdout).toContain(`git commit ${commit},`);
    expect(r.stdout).not.toContain("-dirty");
  });

  test("the image archive holds the released binary's version and commit in its labels", () => {
    if (!WITH_IMAGE) return;
    const tar = (member: string) =>
      spawnSync("tar", ["-xOf", join(out, IMAGE), member], { encoding: "utf8", maxBuffer: 8 << 20 }).stdout;
    const blob = (digest: string) => `blobs/sha256/${digest.replace(/^sha256:/, "")}`;
    const index = JSON.parse(tar("index.json"));
    const manifest = JSON.parse(tar(blob(index.manifests[0].digest)));
    const config = JSON.parse(tar(blob(manifest.config.digest)));
    expect(config.config.Labels["org.opencontainers.image.version"]).toBe(VERSION);
    expect(config.config.Labels["org.opencontainers.image.revision"]).toBe(commit);
    expect(config.config.Entrypoint).toEqual(["/usr/local/bin/kube-proxy"]);
  });

  test("the suite was skipped only because this run asked, and the release says so", () => {
    expect(run?.stderr).toContain("KPTS_RELEASE_TESTS=skip: the suite did not run for this release");
    expect(run?.stderr).not.toContain("==> test:");
  });

  test("KPTS_RELEASE_TESTS other than run or skip: refused with exit 1 before anything is built", () => {
    const before = readdirSync(out).sort();
    const r = release(clone, { KPTS_RELEASE_TESTS: "later" });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("KPTS_RELEASE_TESTS must be 'run' or 'skip', not 'later'");
    expect(r.stderr).not.toContain("==> build");
    expect(readdirSync(out).sort()).toEqual(before);
  });

  test("the summary names each artifact with its size and sha256", () => {
    const sums = readFileSync(join(out, "SHA256SUMS"), "utf8").trimEnd().split("\n");
    for (const line of sums) {
      const [sum, name] = line.split(/\s+/);
      const size = statSync(join(out, name ?? "")).size;
      expect(run?.stdout).toMatch(new RegExp(`${name}\\s+${size} bytes\\s+sha256 ${sum}`));
    }
  });

  test(
    "a modified tracked file: refused with exit 1, naming the dirty tree, before touching dist/release",
    () => {
      const before = readdirSync(out).sort();
      appendFileSync(join(clone, "README.md"), "\nan uncommitted edit\n");
      try {
        const r = release(clone);
        expect(r.status).toBe(1);
        expect(r.stderr).toContain("work tree is dirty");
        expect(r.stderr).toContain("README.md");
        expect(r.stderr).not.toContain("==> build");
        expect(readdirSync(out).sort()).toEqual(before);
      } finally {
        git(clone, "checkout", "-q", "--", "README.md");
      }
    },
    TIMEOUT_MS,
  );
});

// Assembles the root filesystem of the kube-proxy-ts image from Debian packages, the way
// distroless images are made: `apt-get download` + `dpkg-deb -x` into a cache, then only the
// files the binary needs are copied into the root — the binary at /usr/local/bin/kube-proxy,
// every program it execs in any mode, the shared libraries those programs load (read from
// each ELF file's DT_NEEDED entries and interpreter, never guessed; the xtables extensions,
// which libxtables dlopen()s, are added by directory), a few /etc files and the xtables lock.
// No shell, no package manager, no coreutils. Prints the size and the file count.
//
// The packages come from one Debian suite, bookworm by default (KPTS_ROOTFS_SUITE overrides it),
// through an apt configuration private to the cache, whatever the build machine runs. Not
// trixie: its nft 1.1.3 is faster for small transactions into a big table, but nft 1.1.2 and
// later write set metadata that the nft before 1.1.4 most nodes have crashes on (SIGSEGV on any
// listing or transaction; upstream keeps nft 1.0.6 in its image for that reason, and
// test/deploy/image-nft-compat.test.ts checks it). The root is laid out merged-/usr (files under
// /usr, /bin, /sbin, /lib and /lib64 links to it), as newer suites ship their packages.
//
// Usage: scripts/build-rootfs DIR   (DIR must be absent, empty, or an earlier output of this script)
// The package cache lives in ~/.cache/kube-proxy-ts-rootfs/SUITE (KPTS_ROOTFS_CACHE overrides
// the first part).

import { spawnSync } from "node:child_process";
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, join, posix, resolve } from "node:path";

/** Package → the program names kube-proxy-ts execs from it (src/host, src/app, src/exec). */
const PROGRAMS: Readonly<Record<string, readonly string[]>> = {
  iptables: ["ip", "ip6"].flatMap((f) =>
    ["legacy", "nft"].flatMap((b) => ["", "-save", "-restore"].map((s) => `${f}tables-${b}${s}`)),
  ),
  ipset: ["ipset"],
  ipvsadm: ["ipvsadm"],
  conntrack: ["conntrack"],
  nfacct: ["nfacct"],
  iproute2: ["ip"],
  nftables: ["nft"],
  kmod: ["modprobe"],
};

/** Directories whose every file is loaded with dlopen() by a program above. */
const DLOPEN_DIRS: Readonly<Record<string, string>> = {
  iptables: "/usr/lib/x86_64-linux-gnu/xtables",
};

/** Plain files a program reads at run time: protocol and service names, ip's name tables. A
 * list of alternatives takes the first one the packages hold (iproute2 moved its tables from
 * /etc/iproute2 to /usr/share/iproute2 in trixie). */
const DATA_FILES: Readonly<Record<string, readonly (string | readonly string[])[]>> = {
  netbase: ["/etc/protocols", "/etc/services"],
  iproute2: [["/usr/share/iproute2", "/etc/iproute2"]],
};

const PROGRAM_DIRS = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"];
const LIBRARY_DIRS = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"];
const BINARY_PATH = "/usr/local/bin/kube-proxy";
const MAX_ROUNDS = 6;

/** Written by this script: the root user, local name lookups, the lock iptables-legacy takes. */
const GENERATED: Readonly<Record<string, { text: string; mode: number }>> = {
  "/etc/passwd": { text: "root:x:0:0:root:/root:/usr/sbin/nologin\n", mode: 0o644 },
  "/etc/group": { text: "root:x:0:\n", mode: 0o644 },
  "/etc/nsswitch.conf": {
    text: "passwd: files\ngroup: files\nhosts: files dns\nprotocols: files\nservices: files\n",
    mode: 0o644,
  },
  "/run/xtables.lock": { text: "", mode: 0o600 },
};

function fail(message: string): never {
  console.error(`build-rootfs: ${message}`);
  process.exit(1);
}

function run(cmd: string, args: string[], cwd?: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.error) fail(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) fail(`${cmd} ${args.join(" ")} exited ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

// ---- the package cache ---------------------------------------------------------------------

const suite = process.env.KPTS_ROOTFS_SUITE ?? "bookworm";
if (!/^[a-z][a-z0-9-]*$/.test(suite)) fail(`KPTS_ROOTFS_SUITE=${suite}: not a Debian suite name`);
const cacheDir = join(
  process.env.KPTS_ROOTFS_CACHE ?? join(homedir(), ".cache", "kube-proxy-ts-rootfs"),
  suite,
);
const debDir = join(cacheDir, "debs");
const poolDir = join(cacheDir, "pool");
const aptDir = join(cacheDir, "apt");

/** apt options that read and write only aptDir: its own sources, lists and (empty) status. */
function aptOptions(): string[] {
  const opt = (k: string, v: string) => ["-o", `${k}=${v}`];
  return [
    ...opt("Dir::Etc::sourcelist", join(aptDir, "sources.list")),
    ...opt("Dir::Etc::sourceparts", "-"),
    ...opt("Dir::State::Lists", join(aptDir, "lists")),
    ...opt("Dir::State::status", join(aptDir, "status")),
    ...opt("Dir::Cache", join(aptDir, "cache")),
  ];
}

let aptConfigured = false;
let aptUpdated = false;
/**
 * Writes the private apt configuration and fetches the suite's package lists when there are
 * none yet or `fresh` asks for them (a download failed: the lists name a version the mirror no
 * longer has), at most once per build. A cache with lists builds offline.
 */
function aptReady(fresh: boolean): void {
  const changed = aptConfigured ? false : configureApt();
  const lists = join(aptDir, "lists");
  const haveLists = readdirSync(lists).some((f) => /_Packages(\.\w+)?$/.test(f));
  if (aptUpdated || (haveLists && !fresh && !changed)) return;
  aptUpdated = true;
  console.error(`==> apt-get update (${suite}, private to ${aptDir})`);
  run("apt-get", [...aptOptions(), "update", "-qq"]);
}

/** Writes the configuration; true when its sources differ from the ones the lists came from. */
function configureApt(): boolean {
  aptConfigured = true;
  for (const d of ["lists/partial", "cache/archives/partial"])
    mkdirSync(join(aptDir, d), { recursive: true });
  const keyring = "/usr/share/keyrings/debian-archive-keyring.gpg";
  if (!existsSync(keyring)) fail(`${keyring} is missing (package debian-archive-keyring)`);
  const mirror = process.env.KPTS_ROOTFS_MIRROR ?? "http://deb.debian.org/debian";
  // The suite, its point-release updates and its security updates, as a Debian system has them.
  const sources = [`${mirror} ${suite}`, `${mirror} ${suite}-updates`, `${mirror}-security ${suite}-security`]
    .map((s) => `deb [signed-by=${keyring}] ${s} main\n`)
    .join("");
  const file = join(aptDir, "sources.list");
  const changed = !existsSync(file) || readFileSync(file, "utf8") !== sources;
  if (changed) writeFileSync(file, sources);
  if (!existsSync(join(aptDir, "status"))) writeFileSync(join(aptDir, "status"), "");
  return changed;
}

/** The newest downloaded .deb of a package, if any. */
function cachedDeb(pkg: string): string | undefined {
  if (!existsSync(debDir)) return undefined;
  const debs = readdirSync(debDir)
    .filter((f) => f.startsWith(`${pkg}_`) && f.endsWith(".deb"))
    .map((f) => join(debDir, f));
  debs.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return debs[0];
}

function download(pkgs: string[]): void {
  const missing = pkgs.filter((p) => cachedDeb(p) === undefined);
  if (missing.length === 0) return;
  mkdirSync(debDir, { recursive: true });
  console.error(`==> apt-get download ${missing.join(" ")}`);
  const get = () =>
    spawnSync("apt-get", [...aptOptions(), "download", ...missing], { cwd: debDir, encoding: "utf8" });
  aptReady(false);
  let r = get();
  if (r.status !== 0 && !aptUpdated) {
    aptReady(true);
    r = get();
  }
  if (r.status !== 0) fail(`apt-get download ${missing.join(" ")} failed: ${(r.stderr ?? "").trim()}`);
}

/** Unpacks a package once per version; returns the directory that stands for its root. */
function extract(pkg: string): string {
  const deb = cachedDeb(pkg) ?? fail(`no .deb for ${pkg} in ${debDir}`);
  const dir = join(poolDir, posix.basename(deb, ".deb"));
  if (!existsSync(join(dir, ".complete"))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    run("dpkg-deb", ["-x", deb, dir]);
    writeFileSync(join(dir, ".complete"), "");
  }
  return dir;
}

/** What the packages depend on (Depends and Pre-Depends; virtual names skipped). One call:
 * apt-cache takes about a second to start. */
function dependencies(pkgs: string[]): string[] {
  aptReady(false);
  const out = run("apt-cache", [
    ...aptOptions(),
    "depends",
    "--no-recommends",
    "--no-suggests",
    "--no-conflicts",
    "--no-breaks",
    "--no-replaces",
    "--no-enhances",
    ...pkgs,
  ]);
  const deps = new Set<string>();
  for (const line of out.split("\n")) {
    const name = /^\s*\|?(?:Pre)?Depends:\s+(\S+)/.exec(line)?.[1];
    if (name && !name.startsWith("<")) deps.add(name.replace(/:any$/, ""));
  }
  return [...deps];
}

// ---- the pool: every unpacked file, by its path in the image ---------------------------------

/** The top-level directories that are links into /usr in the image (merged /usr). */
const MERGED_DIRS = ["bin", "sbin", "lib", "lib64"];

/** Where a path lives in the merged root: /sbin/ip is /usr/sbin/ip. Packages of older suites
 * still ship files under /sbin or /lib; keying the pool by this keeps one name per file. */
function inUsr(path: string): string {
  const top = path.split("/")[1] ?? "";
  return MERGED_DIRS.includes(top) ? `/usr${path}` : path;
}

interface PoolEntry {
  pkg: string;
  /** Where the file lies on this machine. */
  hostPath: string;
}

function indexPackage(pkg: string, dir: string, index: Map<string, PoolEntry>): void {
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel))) {
      if (rel === "" && name === ".complete") continue;
      const r = posix.join(rel, name);
      const st = lstatSync(join(dir, r));
      if (st.isDirectory()) walk(r);
      else if (!index.has(inUsr(`/${r}`))) index.set(inUsr(`/${r}`), { pkg, hostPath: join(dir, r) });
    }
  };
  walk("");
}

// ---- ELF: what a program loads -----------------------------------------------------------------

interface ElfNeeds {
  interpreter?: string;
  needed: string[];
}

function elfNeeds(hostPath: string): ElfNeeds | undefined {
  const head = Buffer.alloc(4);
  const fd = openSync(hostPath, "r");
  try {
    readSync(fd, head, 0, 4, 0);
  } finally {
    closeSync(fd);
  }
  if (head.toString("latin1") !== "\x7fELF") return undefined;
  const text = run("readelf", ["--wide", "--dynamic", "--program-headers", hostPath]);
  const needed = [...text.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1] ?? "");
  const interp = /Requesting program interpreter: ([^\]]+)\]/.exec(text)?.[1];
  return interp ? { interpreter: interp, needed } : { needed };
}

// ---- assembling the root -----------------------------------------------------------------------

class RootBuilder {
  /** Image path → where its bytes come from (or a symlink target). */
  readonly files = new Map<string, { from: string; pkg: string } | { link: string; pkg: string }>();
  readonly packagesUsed = new Set<string>();
  readonly unresolved = new Set<string>();
  private readonly analysed = new Set<string>();

  constructor(readonly index: ReadonlyMap<string, PoolEntry>) {}

  /** Adds a path from the pool, following symlinks (each link and its target are kept). */
  addPath(anyPath: string, depth = 0): string | undefined {
    if (depth > 16) fail(`symlink loop at ${anyPath}`);
    const path = inUsr(anyPath);
    const entry = this.index.get(path);
    if (!entry) return undefined;
    this.packagesUsed.add(entry.pkg);
    const st = lstatSync(entry.hostPath);
    if (st.isSymbolicLink()) {
      const target = readlinkSync(entry.hostPath);
      this.files.set(path, { link: target, pkg: entry.pkg });
      const abs = target.startsWith("/") ? posix.normalize(target) : posix.join(posix.dirname(path), target);
      return this.addPath(abs, depth + 1) ?? fail(`${path} -> ${target}: the target is in no package`);
    }
    this.files.set(path, { from: entry.hostPath, pkg: entry.pkg });
    this.analyse(path, entry.hostPath);
    return path;
  }

  holdsTree(anyDir: string): boolean {
    const dir = inUsr(anyDir);
    for (const p of this.index.keys()) if (p === dir || p.startsWith(`${dir}/`)) return true;
    return false;
  }

  addTree(anyDir: string): void {
    const dir = inUsr(anyDir);
    const prefix = `${dir}/`;
    const paths = [...this.index.keys()].filter((p) => p.startsWith(prefix) || p === dir);
    if (paths.length === 0) this.unresolved.add(`${dir}/ (directory)`);
    for (const p of paths.sort()) this.addPath(p);
  }

  addProgram(pkg: string, name: string): void {
    for (const dir of PROGRAM_DIRS) {
      const p = inUsr(`${dir}/${name}`);
      if (this.index.get(p)?.pkg === pkg) {
        this.addPath(p);
        return;
      }
    }
    this.unresolved.add(`program ${name} (package ${pkg})`);
  }

  /** Adds what an ELF file loads: its interpreter and its DT_NEEDED libraries, recursively. */
  analyse(path: string, hostPath: string): void {
    if (this.analysed.has(path)) return;
    this.analysed.add(path);
    const needs = elfNeeds(hostPath);
    if (!needs) return;
    if (needs.interpreter && !this.addPath(needs.interpreter))
      this.unresolved.add(`interpreter ${needs.interpreter} (of ${path})`);
    for (const soname of needs.needed) {
      const found = LIBRARY_DIRS.map((d) => inUsr(`${d}/${soname}`)).find((p) => this.index.has(p));
      if (found) this.addPath(found);
      else this.unresolved.add(`${soname} (needed by ${path})`);
    }
  }
}

function plan(binary: string, packages: Set<string>): RootBuilder {
  const index = new Map<string, PoolEntry>();
  for (const pkg of [...packages].sort()) indexPackage(pkg, extract(pkg), index);
  const builder = new RootBuilder(index);
  if (!elfNeeds(binary)) fail(`${binary} is not an ELF executable`);
  builder.analyse(BINARY_PATH, binary);
  for (const [pkg, names] of Object.entries(PROGRAMS)) for (const n of names) builder.addProgram(pkg, n);
  for (const dir of Object.values(DLOPEN_DIRS)) builder.addTree(dir);
  for (const paths of Object.values(DATA_FILES))
    for (const p of paths) {
      const choices = typeof p === "string" ? [p] : p;
      builder.addTree(choices.find((c) => builder.holdsTree(c)) ?? choices[0] ?? "");
    }
  return builder;
}

function resolvePackages(binary: string): RootBuilder {
  const packages = new Set([...Object.keys(PROGRAMS), ...Object.keys(DATA_FILES)]);
  for (let round = 1; ; round++) {
    download([...packages]);
    const builder = plan(binary, packages);
    if (builder.unresolved.size === 0) return builder;
    // Something is still missing: bring in what the packages so far depend on, and try again.
    const more = dependencies([...packages]).filter((p) => !packages.has(p));
    if (more.length === 0 || round === MAX_ROUNDS)
      fail(`cannot resolve from Debian packages: ${[...builder.unresolved].join("; ")}`);
    for (const p of new Set(more)) packages.add(p);
  }
}

function prepareOutput(dir: string): void {
  if (existsSync(dir)) {
    const entries = readdirSync(dir);
    if (entries.length > 0 && !existsSync(join(dir, BINARY_PATH)))
      fail(`${dir} is not empty and is not an earlier root from this script; refusing to delete it`);
    rmSync(dir, { recursive: true, force: true });
  }
  mkdirSync(dir, { recursive: true, mode: 0o755 });
}

function write(dir: string, builder: RootBuilder, binary: string): void {
  const target = (p: string) => join(dir, p);
  const ensureDir = (p: string) => mkdirSync(dirname(target(p)), { recursive: true, mode: 0o755 });
  for (const [path, src] of [...builder.files].sort(([a], [b]) => a.localeCompare(b))) {
    ensureDir(path);
    if ("link" in src) symlinkSync(src.link, target(path));
    else {
      copyFileSync(src.from, target(path));
      chmodSync(target(path), statSync(src.from).mode & 0o7777);
    }
  }
  // Licences travel with the programs, as in Debian's own images.
  for (const pkg of [...builder.packagesUsed].sort()) {
    const name = pkg.replace(/:.*$/, "");
    const copyright = `/usr/share/doc/${name}/copyright`;
    const entry = builder.index.get(copyright);
    if (!entry || !lstatSync(entry.hostPath).isFile()) continue;
    ensureDir(copyright);
    copyFileSync(entry.hostPath, target(copyright));
    chmodSync(target(copyright), 0o644);
  }
  ensureDir(BINARY_PATH);
  copyFileSync(binary, target(BINARY_PATH));
  chmodSync(target(BINARY_PATH), 0o755);
  for (const [path, { text, mode }] of Object.entries(GENERATED)) {
    ensureDir(path);
    writeFileSync(target(path), text);
    chmodSync(target(path), mode);
  }
  for (const d of MERGED_DIRS) symlinkSync(`usr/${d}`, target(`/${d}`));
  mkdirSync(target("/tmp"), { recursive: true });
  chmodSync(target("/tmp"), 0o1777);
  // Mount points the runtime fills; the binary reads /proc/self/exe to find its own code.
  for (const d of ["/proc", "/sys", "/dev"]) mkdirSync(target(d), { recursive: true, mode: 0o755 });
}

function measure(dir: string): { bytes: number; files: number; links: number } {
  let bytes = 0;
  let files = 0;
  let links = 0;
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = lstatSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isSymbolicLink()) links++;
      else {
        files++;
        bytes += st.size;
      }
    }
  };
  walk(dir);
  return { bytes, files, links };
}

function main(): void {
  const out = process.argv[2];
  if (!out || process.argv.length > 3) fail("usage: scripts/build-rootfs DIR");
  const arch = run("dpkg", ["--print-architecture"]).trim();
  if (arch !== "amd64") fail(`the image is linux-amd64; this machine's Debian architecture is ${arch}`);
  const binary = resolve("dist/kube-proxy-ts");
  if (!existsSync(binary)) fail(`${binary} is missing: run scripts/build first`);
  const builder = resolvePackages(binary);
  const dir = resolve(out);
  prepareOutput(dir);
  write(dir, builder, binary);
  const { bytes, files, links } = measure(dir);
  const pkgs = [...builder.packagesUsed].map((p) => p.replace(/_.*$/, "")).sort();
  console.log(`root filesystem: ${dir}`);
  console.log(`packages: ${pkgs.join(" ")}`);
  console.log(`size: ${(bytes / 1e6).toFixed(1)} MB in ${files} files and ${links} symlinks`);
}

main();

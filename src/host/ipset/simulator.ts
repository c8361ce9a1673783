// A stateful stand-in for the ipset binary (7.x on a 6.x kernel), answering through a SimulatedExec so
// the real IpsetClient is what tests exercise. It holds sets (in kernel slot order) and their
// elements, and reproduces what fake-vs-real tests pinned down about `ipset restore`:
//   - lines run in order and the first error ends the run ("Error in line N: ...", exit 1);
//   - consecutive add (or del) lines for one set are sent as one batch, so a syntax error drops
//     the pending batch, and a kernel refusal inside a batch keeps the elements before it;
//   - usage errors name no line and exit 2; -exist forgives re-create with the same parameters,
//     re-add, del of a missing element and destroy of a missing set (not flush of one).

import { ok, SimulatedExec } from "../../exec/simulated.ts";
import type { ExecResult, TextExecRequest } from "../../exec/types.ts";
import type { InetFamily } from "../../util/net/family.ts";
import { type ParsedElement, parseEntry } from "./entries.ts";
import { ipsetWords } from "./save-parser.ts";
import { IPSET_TYPES, type IpsetSet, type IpsetSetSpec, type IpsetType } from "./types.ts";

export interface SimulatedIpsetOptions {
  /** Version the fake reports, without the leading "v". */
  version?: string;
  /** Seed for the initval the kernel prints for hash sets. */
  seed?: number;
}

interface SimulatedSet {
  name: string;
  type: IpsetType;
  family: InetFamily;
  hashSize: number;
  maxElem: number;
  /** bitmap:port bounds. */
  range: [number, number];
  /** Created with the comment extension. */
  comment: boolean;
  initval: number;
  /** Element -> its comment ("" when none). */
  entries: Map<string, string>;
  /** Kernel references (iptables -m set rules); a referenced set cannot be destroyed. */
  references: number;
}

// Set type revisions a 6.x kernel reports.
const REVISION: Readonly<Record<IpsetType, number>> = {
  "hash:ip": 6,
  "hash:ip,port": 7,
  "hash:ip,port,ip": 6,
  "hash:ip,port,net": 8,
  "hash:net": 7,
  "bitmap:port": 3,
};

const MAX_NAME = 31;

/** An error the way ipset reports it: with the line when it has one, exit code 1 or 2. */
class Failure {
  constructor(
    readonly message: string,
    readonly code: 1 | 2,
    /** Usage errors and some port errors carry no "Error in line N:". */
    readonly lineless = false,
  ) {}
}

const usage = (message: string) => new Failure(message, 2, true);
const kernel = (message: string) => new Failure(message, 1);

interface Options {
  exist: boolean;
  names: boolean;
  terse: boolean;
  saveFormat: boolean;
}

interface Batch {
  verb: "add" | "del";
  set: string;
  items: { line: number; elements: readonly ParsedElement[]; comment: string | undefined }[];
}

type Outcome = { stdout: string; stderr: string; failure?: Failure; line?: number };

export class SimulatedIpset {
  version: string;
  private readonly slots: (SimulatedSet | undefined)[] = [];
  private seed: number;

  constructor(opts: SimulatedIpsetOptions = {}) {
    this.version = opts.version ?? "7.17";
    this.seed = opts.seed ?? 0x5eed;
  }

  /** ipset reports its major version as the netlink protocol version. */
  get protocolVersion(): string {
    return this.version.split(".")[0] ?? "";
  }

  /** Registers this fake as the "ipset" program of `exec` (a new SimulatedExec by default). */
  install(exec: SimulatedExec = new SimulatedExec()): SimulatedExec {
    return exec.on("ipset", (req) => this.handle(req));
  }

  // ---- state inspection and seeding for tests ----

  /** Set names in kernel order (what `ipset list -n` prints). */
  setNames(): string[] {
    return this.live().map((s) => s.name);
  }

  /** Elements of one set, sorted; undefined when the set does not exist. */
  entries(name: string): string[] | undefined {
    const set = this.find(name);
    return set ? [...set.entries.keys()].sort() : undefined;
  }

  /** The sets as IpsetClient.listSets() returns them. */
  sets(): Map<string, IpsetSet> {
    const out = new Map<string, IpsetSet>();
    for (const s of this.live()) {
      const spec: IpsetSetSpec =
        s.type === "bitmap:port"
          ? { name: s.name, type: s.type, family: "inet", comment: "", range: `${s.range[0]}-${s.range[1]}` }
          : {
              name: s.name,
              type: s.type,
              family: s.family,
              comment: "",
              hashSize: s.hashSize,
              maxElem: s.maxElem,
            };
      out.set(s.name, { spec, entries: new Set(s.entries.keys()) });
    }
    return out;
  }

  /** Marks a set as referenced by `count` iptables rules (destroy then fails as in use). */
  setReferences(name: string, count: number): void {
    const set = this.find(name);
    if (!set) throw new Error(`SimulatedIpset.setReferences: no set ${name}`);
    set.references = count;
  }

  /** `ipset save` text. */
  save(name?: string): string {
    return this.saveText(name === undefined ? this.live() : this.live().filter((s) => s.name === name));
  }

  /** Runs a restore script directly; throws with ipset's message when it fails. */
  load(script: string, exist = false): void {
    const res = this.restore(script, exist);
    if (res.code !== 0) throw new Error(`SimulatedIpset.load: ${res.stderr.trim()}`);
  }

  reset(): void {
    this.slots.length = 0;
  }

  // ---- the binary ----

  /** Answers one ipset invocation the way the binary would. */
  handle(req: TextExecRequest): ExecResult {
    const opts: Options = { exist: false, names: false, terse: false, saveFormat: false };
    const words: string[] = [];
    const args = req.args;
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (a === "-exist" || a === "-!") opts.exist = true;
      else if (a === "-n" || a === "-name") opts.names = true;
      else if (a === "-t" || a === "-terse") opts.terse = true;
      else if (
        a === "-q" ||
        a === "-quiet" ||
        a === "-s" ||
        a === "-sorted" ||
        a === "-r" ||
        a === "-resolve"
      ) {
        // Output details the fake does not vary.
      } else if (a === "-o" || a === "-output") opts.saveFormat = args[++i] === "save";
      else words.push(a);
    }
    const [first = ""] = words;
    if (["version", "--version", "-v", "-V"].includes(first)) {
      return ok(`ipset v${this.version}, protocol version: ${this.protocolVersion}\n`);
    }
    if (first === "restore" || first === "-R") {
      if (words.length > 1)
        return this.report({ stdout: "", stderr: "", failure: usage(`Unknown argument ${words[1]}`) });
      return this.restore(req.stdin ?? "", opts.exist);
    }
    if (first === "") {
      return this.report({ stdout: "", stderr: "", failure: usage("No command specified.") });
    }
    const res = this.parseCheck(words, opts) ?? this.command(words, opts);
    if (res instanceof Failure) return this.report({ stdout: "", stderr: "", failure: res });
    return { code: res.code, stdout: res.stdout, stderr: res.stderr };
  }

  private report(o: Outcome): ExecResult {
    if (!o.failure) return { code: 0, stdout: o.stdout, stderr: o.stderr };
    const f = o.failure;
    const where = o.line !== undefined && !f.lineless ? `Error in line ${o.line}: ` : "";
    let stderr = `${o.stderr}ipset v${this.version}: ${where}${f.message}\n`;
    if (f.code === 2) stderr += "Try `ipset help' for more information.\n";
    return { code: f.code, stdout: o.stdout, stderr };
  }

  private restore(script: string, exist: boolean): ExecResult {
    let stdout = "";
    let stderr = "";
    let batch: Batch | undefined;
    const lines = script.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    for (let i = 0; i < lines.length; i++) {
      const n = i + 1;
      const text = lines[i]!.trim();
      if (text === "" || text.startsWith("#")) continue;
      const words = ipsetWords(text);
      const opts: Options = { exist, names: false, terse: false, saveFormat: false };
      const rest = words.filter((w) => {
        if (w === "-exist" || w === "-!") {
          opts.exist = true;
          return false;
        }
        return true;
      });
      const verb = rest[0] ?? "";
      if (verb === "add" || verb === "del") {
        const parsed = this.parseElementCommand(rest);
        if (parsed instanceof Failure) return this.report({ stdout, stderr, failure: parsed, line: n });
        const item = { line: n, elements: parsed.elements, comment: parsed.comment };
        if (batch && batch.verb === verb && batch.set === parsed.set.name) {
          batch.items.push(item);
        } else {
          const failed = batch ? this.commit(batch, exist) : undefined;
          if (failed) return this.report({ stdout, stderr, failure: failed.failure, line: failed.line });
          batch = { verb, set: parsed.set.name, items: [item] };
        }
        continue;
      }
      // Anything else is parsed first (a parse error drops the pending batch), then the
      // pending batch is sent, then the command runs on its own.
      const invalid = this.parseCheck(rest, opts);
      if (invalid) return this.report({ stdout, stderr, failure: invalid, line: n });
      const failed = batch ? this.commit(batch, exist) : undefined;
      batch = undefined;
      if (failed) return this.report({ stdout, stderr, failure: failed.failure, line: failed.line });
      const res = this.command(rest, opts);
      if (res instanceof Failure) return this.report({ stdout, stderr, failure: res, line: n });
      stdout += res.stdout;
      stderr += res.stderr;
    }
    const failed = batch ? this.commit(batch, exist) : undefined;
    if (failed) return this.report({ stdout, stderr, failure: failed.failure, line: failed.line });
    return { code: 0, stdout, stderr };
  }

  // Parse-time checks of an add/del: the set must exist (ipset asks the kernel for its type)
  // and the element must parse for that type.
  private parseElementCommand(
    words: readonly string[],
  ): { set: SimulatedSet; elements: readonly ParsedElement[]; comment: string | undefined } | Failure {
    const [verb, name, elem, ...extra] = words;
    if (name === undefined) return usage(`Missing mandatory argument to command ${verb}`);
    if (name.length > MAX_NAME)
      return kernel(`Syntax error: setname '${name}' is longer than ${MAX_NAME} characters`);
    if (elem === undefined) return usage(`Missing second mandatory argument to command ${verb}`);
    const set = this.find(name);
    if (!set) return kernel("The set with the given name does not exist");
    let comment: string | undefined;
    for (let i = 0; i < extra.length; i++) {
      if (extra[i] === "comment" && verb === "add" && set.comment && extra[i + 1] !== undefined) {
        comment = extra[++i];
      } else {
        return usage(`Unknown argument: \`${extra[i]}'`);
      }
    }
    const parsed = parseEntry(set.type, set.family, elem);
    if (!parsed.ok) return new Failure(parsed.message, 1, parsed.lineless);
    return { set, elements: parsed.elements, comment };
  }

  // Sends a batch: elements apply in order until the kernel refuses one.
  private commit(batch: Batch, exist: boolean): { failure: Failure; line: number } | undefined {
    const set = this.find(batch.set);
    for (const item of batch.items) {
      if (!set) return { failure: kernel("The set with the given name does not exist"), line: item.line };
      for (const el of item.elements) {
        const refused =
          batch.verb === "add"
            ? this.addElement(set, el, item.comment, exist)
            : this.delElement(set, el, exist);
        if (refused) return { failure: refused, line: item.line };
      }
    }
    return undefined;
  }

  private addElement(
    set: SimulatedSet,
    el: ParsedElement,
    comment: string | undefined,
    exist: boolean,
  ): Failure | undefined {
    const check = this.elementCheck(set, el);
    if (check) return check;
    if (set.entries.has(el.text)) {
      if (!exist) return kernel("Element cannot be added to the set: it's already added");
      if (comment !== undefined) set.entries.set(el.text, comment);
      return undefined;
    }
    if (set.type !== "bitmap:port" && set.entries.size >= set.maxElem) {
      return kernel("Hash is full, cannot add more elements");
    }
    set.entries.set(el.text, comment ?? "");
    return undefined;
  }

  private delElement(set: SimulatedSet, el: ParsedElement, exist: boolean): Failure | undefined {
    const check = this.elementCheck(set, el);
    if (check) return check;
    if (!set.entries.delete(el.text) && !exist)
      return kernel("Element cannot be deleted from the set: it's not added");
    return undefined;
  }

  private elementCheck(set: SimulatedSet, el: ParsedElement): Failure | undefined {
    if (el.cidr === 0) return kernel("The value of the CIDR parameter of the IP address is invalid");
    if (el.port !== undefined && (el.port < set.range[0] || el.port > set.range[1])) {
      return kernel("Element is out of the range of the set");
    }
    return undefined;
  }

  /** The errors ipset finds while parsing a line, before anything reaches the kernel. */
  private parseCheck(words: readonly string[], opts: Options): Failure | undefined {
    const [verb = "", name, ...rest] = words;
    const extra = (allowed: number) =>
      rest.length > allowed ? usage(`Unknown argument: \`${rest[allowed]}'`) : undefined;
    switch (verb) {
      case "create":
      case "-N":
        return this.create(name, rest, opts.exist, true);
      case "add":
      case "-A":
      case "del":
      case "-D":
      case "test":
      case "-T": {
        const parsed = this.parseElementCommand(["x", ...words.slice(1)]);
        return parsed instanceof Failure ? parsed : undefined;
      }
      case "destroy":
      case "x":
      case "-X":
      case "flush":
      case "-F":
      case "list":
      case "-L":
      case "save":
      case "-S":
        return extra(0);
      case "rename":
      case "-e":
      case "swap":
      case "-W":
        if (name === undefined || rest[0] === undefined)
          return usage(`Missing second mandatory argument to command ${verb}`);
        return extra(1);
      default:
        return usage(`No command specified: unknown argument ${verb}`);
    }
  }

  /** One non-restore command (also each non-batched restore line). */
  private command(
    words: readonly string[],
    opts: Options,
  ): { code: number; stdout: string; stderr: string } | Failure {
    const [verb = "", name, ...rest] = words;
    const done = (stdout = "", stderr = "", code = 0) => ({ code, stdout, stderr });
    switch (verb) {
      case "create":
      case "-N":
        return this.create(name, rest, opts.exist) ?? done();
      case "add":
      case "-A":
      case "del":
      case "-D": {
        const v = verb === "-A" ? "add" : verb === "-D" ? "del" : verb;
        const parsed = this.parseElementCommand([v, ...words.slice(1)]);
        if (parsed instanceof Failure) return parsed;
        for (const el of parsed.elements) {
          const refused =
            v === "add"
              ? this.addElement(parsed.set, el, parsed.comment, opts.exist)
              : this.delElement(parsed.set, el, opts.exist);
          if (refused) return refused;
        }
        return done();
      }
      case "test":
      case "-T": {
        const parsed = this.parseElementCommand(["test", ...words.slice(1)]);
        if (parsed instanceof Failure) return parsed;
        const el = parsed.elements[0]!;
        return parsed.set.entries.has(el.text)
          ? done("", `Warning: ${words[2]} is in set ${parsed.set.name}.\n`)
          : done("", `${words[2]} is NOT in set ${parsed.set.name}.\n`, 1);
      }
      case "destroy":
      case "x":
      case "-X":
        return this.destroy(name, opts.exist) ?? done();
      case "flush":
      case "-F": {
        if (name === undefined) {
          for (const s of this.live()) s.entries.clear();
          return done();
        }
        const set = this.find(name);
        if (!set) return kernel("The set with the given name does not exist");
        set.entries.clear();
        return done();
      }
      case "list":
      case "-L":
      case "save":
      case "-S": {
        const chosen = name === undefined ? this.live() : this.live().filter((s) => s.name === name);
        if (name !== undefined && chosen.length === 0)
          return kernel("The set with the given name does not exist");
        if (rest.length > 0) return usage(`Unknown argument: \`${rest[0]}'`);
        if (verb === "save" || verb === "-S" || opts.saveFormat) return done(this.saveText(chosen));
        if (opts.names) return done(chosen.map((s) => `${s.name}\n`).join(""));
        return done(this.listText(chosen, opts.terse));
      }
      case "rename":
      case "-e": {
        const set = name === undefined ? undefined : this.find(name);
        const to = rest[0];
        if (name === undefined || to === undefined)
          return usage(`Missing second mandatory argument to command ${verb}`);
        if (!set) return kernel("The set with the given name does not exist");
        if (this.find(to)) return kernel("Set cannot be renamed: a set with the new name already exists");
        set.name = to;
        return done();
      }
      case "swap":
      case "-W": {
        const a = name === undefined ? undefined : this.find(name);
        const to = rest[0];
        if (name === undefined || to === undefined)
          return usage(`Missing second mandatory argument to command ${verb}`);
        const b = this.find(to);
        if (!a || !b) return kernel("The set with the given name does not exist");
        if (a.type !== b.type || a.family !== b.family)
          return kernel("The sets cannot be swapped: their type does not match");
        const ia = this.slots.indexOf(a);
        const ib = this.slots.indexOf(b);
        [a.name, b.name] = [b.name, a.name];
        this.slots[ia] = b;
        this.slots[ib] = a;
        return done();
      }
      default:
        return usage(`No command specified: unknown argument ${verb}`);
    }
  }

  private create(
    name: string | undefined,
    args: readonly string[],
    exist: boolean,
    parseOnly = false,
  ): Failure | undefined {
    if (name === undefined) return usage("Missing mandatory argument to command create");
    if (name.length > MAX_NAME)
      return kernel(`Syntax error: setname '${name}' is longer than ${MAX_NAME} characters`);
    const [typeName, ...opts] = args;
    if (typeName === undefined) return usage("Missing second mandatory argument to command create");
    if (!(IPSET_TYPES as readonly string[]).includes(typeName)) {
      return kernel(`Syntax error: typename '${typeName}' is unknown`);
    }
    const type = typeName as IpsetType;
    const want: SimulatedSet = {
      name,
      type,
      family: "inet",
      hashSize: 1024,
      maxElem: 65536,
      range: [0, 65535],
      comment: false,
      initval: 0,
      entries: new Map(),
      references: 0,
    };
    let haveRange = false;
    const bitmap = type === "bitmap:port";
    for (let i = 0; i < opts.length; i++) {
      const o = opts[i]!;
      const v = opts[i + 1];
      const number = (): number | Failure => {
        i++;
        if (v === undefined) return usage(`Missing mandatory argument to option ${o}`);
        if (!/^\d+$/.test(v)) return kernel(`Syntax error: '${v}' is invalid as number`);
        return Number(v);
      };
      if (o === "family" && !bitmap) {
        i++;
        if (v === "inet" || v === "ipv4" || v === "-4") want.family = "inet";
        else if (v === "inet6" || v === "ipv6" || v === "-6") want.family = "inet6";
        else return kernel(`Syntax error: unknown inet family ${v ?? ""}`);
      } else if ((o === "hashsize" || o === "maxelem" || o === "bucketsize") && !bitmap) {
        const n = number();
        if (n instanceof Failure) return n;
        if (o === "hashsize") want.hashSize = n;
        if (o === "maxelem") want.maxElem = n;
      } else if (o === "initval" && !bitmap) {
        i++;
      } else if (o === "range" && bitmap) {
        i++;
        const m = /^(\d+)-(\d+)$/.exec(v ?? "");
        if (!m) return kernel(`Syntax error: '${v ?? ""}' is invalid as number`);
        const lo = Number(m[1]);
        const hi = Number(m[2]);
        want.range = lo <= hi ? [lo, hi] : [hi, lo];
        haveRange = true;
      } else if (o === "comment") {
        want.comment = true;
      } else {
        return usage(`Unknown argument: \`${o}'`);
      }
    }
    if (bitmap && !haveRange) return usage("Mandatory option `range' is missing");
    if (parseOnly) return undefined;
    const existing = this.find(name);
    if (existing) {
      // The kernel compares type and the parameters that cannot change (not family or hashsize).
      const same =
        existing.type === want.type &&
        existing.comment === want.comment &&
        (bitmap
          ? existing.range[0] === want.range[0] && existing.range[1] === want.range[1]
          : existing.maxElem === want.maxElem);
      if (exist && same) return undefined;
      return kernel("Set cannot be created: set with the same name already exists");
    }
    want.initval = this.nextInitval();
    const free = this.slots.indexOf(undefined);
    if (free >= 0) this.slots[free] = want;
    else this.slots.push(want);
    return undefined;
  }

  private destroy(name: string | undefined, exist: boolean): Failure | undefined {
    if (name === undefined) {
      if (this.live().some((s) => s.references > 0)) {
        return kernel("Set cannot be destroyed: it is in use by a kernel component");
      }
      this.slots.length = 0;
      return undefined;
    }
    const set = this.find(name);
    if (!set) return exist ? undefined : kernel("The set with the given name does not exist");
    if (set.references > 0) return kernel("Set cannot be destroyed: it is in use by a kernel component");
    this.slots[this.slots.indexOf(set)] = undefined;
    while (this.slots.length > 0 && this.slots[this.slots.length - 1] === undefined) this.slots.pop();
    return undefined;
  }

  // ---- output ----

  private header(s: SimulatedSet): string {
    if (s.type === "bitmap:port") return `range ${s.range[0]}-${s.range[1]}${s.comment ? " comment" : ""}`;
    const initval = `0x${s.initval.toString(16).padStart(8, "0")}`;
    return (
      `family ${s.family} hashsize ${s.hashSize} maxelem ${s.maxElem}${s.comment ? " comment" : ""} ` +
      `bucketsize 12 initval ${initval}`
    );
  }

  private member(s: SimulatedSet, entry: string, comment: string): string {
    return s.comment && comment !== "" ? `${entry} comment "${comment}"` : entry;
  }

  private saveText(sets: readonly SimulatedSet[]): string {
    const out: string[] = [];
    for (const s of sets) {
      out.push(`create ${s.name} ${s.type} ${this.header(s)}`);
      for (const [e, c] of s.entries) out.push(`add ${s.name} ${this.member(s, e, c)}`);
    }
    return out.length === 0 ? "" : `${out.join("\n")}\n`;
  }

  private listText(sets: readonly SimulatedSet[], terse: boolean): string {
    return sets
      .map((s) => {
        const lines = [
          `Name: ${s.name}`,
          `Type: ${s.type}`,
          `Revision: ${REVISION[s.type]}`,
          `Header: ${this.header(s)}`,
          `Size in memory: ${s.type === "bitmap:port" ? 8264 : 200 + 64 * s.entries.size}`,
          `References: ${s.references}`,
          `Number of entries: ${s.entries.size}`,
        ];
        if (!terse) {
          lines.push("Members:");
          for (const [e, c] of s.entries) lines.push(this.member(s, e, c));
        }
        return `${lines.join("\n")}\n`;
      })
      .join("\n");
  }

  // ---- helpers ----

  private live(): SimulatedSet[] {
    return this.slots.filter((s): s is SimulatedSet => s !== undefined);
  }

  private find(name: string): SimulatedSet | undefined {
    return this.live().find((s) => s.name === name);
  }

  // Deterministic stand-in for the kernel's random hash seed (xorshift32).
  private nextInitval(): number {
    let x = this.seed || 1;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.seed = x >>> 0;
    return this.seed;
  }
}

export function createSimulatedIpset(opts: SimulatedIpsetOptions = {}): SimulatedIpset {
  return new SimulatedIpset(opts);
}

// A stateful stand-in for the nft binary (1.0.6, bookworm's and the image's, or 1.1.3, trixie's,
// on a 6.x kernel), answering through a SimulatedExec so
// the real NftClient is what tests exercise. It holds tables of chains (with rules as text), sets
// and maps, reads the line shapes NftTransaction renders, and applies `nft -f -` the way
// fake-vs-real tests pinned down:
//   - the input is atomic; syntax errors are all reported, then nothing else runs;
//   - then an evaluation pass (nft's userspace cache of tables, sets and maps) blames lines that
//     name a missing table, set or map; any such error stops the run before the kernel sees it;
//   - then the kernel pass applies lines in order to a copy, a refused line is skipped and
//     blamed ("Could not process rule: ..."), and the copy is kept only when nothing failed;
//   - add of an existing object is a no-op; a chain referenced by a jump/goto (rule or verdict
//     map element) cannot be deleted (busy), a chain with only its own rules can (this kernel
//     deletes them with it); a map element re-added with another value is "File exists".
// Rule statements are not understood beyond their jump/goto targets and @set references.
// Where the two releases differ, fake-vs-real pinned it: 1.1 words one syntax error differently
// and refuses a base chain re-declared with another hook or priority in userspace, where 1.0.6
// leaves that to the kernel ("Operation not supported").

import { fail, ok, SimulatedExec } from "../../exec/simulated.ts";
import type { ExecResult, TextExecRequest } from "../../exec/types.ts";
import { utf8Length } from "../comment-text.ts";
import { NAMED_PRIORITIES, renderNftListing } from "./listing.ts";

/** The releases the fake speaks as, with their names as `nft --version` prints them. */
export const SIMULATED_NFT_RELEASES = {
  "1.0.6": "Lester Gooch #5",
  "1.1.3": "Commodore Bullmoose #4",
} as const;
export type SimulatedNftVersion = keyof typeof SIMULATED_NFT_RELEASES;
export const SIMULATED_NFT_VERSION: SimulatedNftVersion = "1.0.6";
/** Set flags in the order of their NFT_SET_* bits, as nft 1.1 lists them. */
const SET_FLAG_BITS = ["anonymous", "constant", "interval", "map", "timeout", "dynamic"];
const FAMILIES = new Set(["ip", "ip6", "inet", "arp", "bridge", "netdev"]);

export interface SimulatedNftChain {
  base?: { type: string; hook: string; priority: number };
  comment?: string;
  /** Rule statements as written after the chain name (comment included). */
  rules: string[];
}

export interface SimulatedNftSet {
  type: string;
  flags: string[];
  timeoutSeconds?: number;
  comment?: string;
  /** Element keys ("10.0.0.1 . tcp . 80"). */
  elements: Map<string, undefined>;
}

export interface SimulatedNftMap {
  /** "KEY-TYPE : VALUE-TYPE". */
  type: string;
  comment?: string;
  /** Key -> value ("goto service-x"). */
  elements: Map<string, string>;
}

export interface SimulatedNftTable {
  comment?: string;
  chains: Map<string, SimulatedNftChain>;
  sets: Map<string, SimulatedNftSet>;
  maps: Map<string, SimulatedNftMap>;
}

// ---- tokens and parsed commands ----

interface Token {
  readonly text: string;
  /** 1-based first and last column. */
  readonly col: number;
  readonly end: number;
  readonly quoted: boolean;
}

const PUNCT = new Set(["{", "}", ";", ","]);
const OBJECT_KINDS = new Set(["table", "chain", "rule", "set", "map", "element"]);
const KEYWORDS = new Set([...OBJECT_KINDS, ...FAMILIES, "add", "flush", "delete", "comment", "type", "hook"]);

function tokenize(line: string): Token[] | SyntaxFailure {
  const out: Token[] = [];
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (c === " " || c === "\t") {
      i++;
      continue;
    }
    if (c === "#") break;
    if (c === '"') {
      const close = line.indexOf('"', i + 1);
      if (close < 0) return new SyntaxFailure(i + 1, line.length, "syntax error, unexpected junk");
      out.push({ text: line.slice(i + 1, close), col: i + 1, end: close + 1, quoted: true });
      i = close + 1;
      continue;
    }
    if (PUNCT.has(c)) {
      out.push({ text: c, col: i + 1, end: i + 1, quoted: false });
      i++;
      continue;
    }
    let j = i;
    while (j < line.length && !' \t"#'.includes(line[j]!) && !PUNCT.has(line[j]!)) j++;
    out.push({ text: line.slice(i, j), col: i + 1, end: j, quoted: false });
    i = j;
  }
  return out;
}

class SyntaxFailure {
  constructor(
    readonly col: number,
    readonly end: number,
    readonly message: string,
  ) {}
}

interface Span {
  readonly col: number;
  readonly end: number;
}

interface ElementSpec {
  readonly key: string;
  readonly value?: string;
  readonly span: Span;
}

type Command =
  | { kind: "table"; verb: Verb; comment?: string }
  | { kind: "chain"; verb: Verb; name: string; base?: SimulatedNftChain["base"]; comment?: string }
  | { kind: "rule"; verb: "add"; name: string; body: string; jumps: Ref[]; sets: Ref[] }
  | {
      kind: "set" | "map";
      verb: Verb;
      name: string;
      type?: string;
      flags?: string[];
      timeoutSeconds?: number;
      comment?: string;
    }
  | { kind: "element"; verb: "add" | "delete"; name: string; elements: ElementSpec[] };

type Verb = "add" | "flush" | "delete";

interface Ref extends Span {
  readonly name: string;
}

interface Parsed {
  readonly line: number;
  readonly text: string;
  readonly family: string;
  readonly table: string;
  readonly tableSpan: Span;
  /** The object name's span (the table's for table commands). */
  readonly nameSpan: Span;
  readonly cmd: Command;
}

/** Cursor over one line's tokens that reports what it did not expect the way nft's parser does. */
class Cursor {
  i = 0;
  constructor(
    readonly tokens: readonly Token[],
    readonly lineLength: number,
  ) {}

  peek(): Token | undefined {
    return this.tokens[this.i];
  }

  next(expecting: string): Token {
    const t = this.tokens[this.i];
    if (!t) throw this.unexpected(expecting);
    this.i++;
    return t;
  }

  word(expecting: string): Token {
    const t = this.next(expecting);
    if (PUNCT.has(t.text) && !t.quoted) {
      this.i--;
      throw this.unexpected(expecting);
    }
    return t;
  }

  expect(text: string): Token {
    const t = this.next(`'${text}'`);
    if (t.text !== text || t.quoted) {
      this.i--;
      throw this.unexpected(`'${text}'`);
    }
    return t;
  }

  atEnd(): boolean {
    return this.i >= this.tokens.length;
  }

  unexpected(expecting?: string): SyntaxFailure {
    const t = this.tokens[this.i];
    const suffix = expecting ? `, expecting ${expecting}` : "";
    if (!t)
      return new SyntaxFailure(
        this.lineLength + 1,
        this.lineLength + 1,
        `syntax error, unexpected newline${suffix}`,
      );
    // nft's scanner names keywords by themselves and everything else "string".
    const what = t.quoted
      ? "quoted string"
      : PUNCT.has(t.text)
        ? `'${t.text}'`
        : KEYWORDS.has(t.text)
          ? t.text
          : "string";
    return new SyntaxFailure(t.col, t.end, `syntax error, unexpected ${what}${suffix}`);
  }
}

/** Statements of a `{ ... ; ... }` block, each as its tokens; the cursor must be at "{". */
function blockStatements(c: Cursor): Token[][] {
  c.expect("{");
  const statements: Token[][] = [];
  let current: Token[] = [];
  for (;;) {
    const t = c.next("'}'");
    if (!t.quoted && (t.text === ";" || t.text === "}")) {
      if (current.length) statements.push(current);
      current = [];
      if (t.text === "}") break;
      continue;
    }
    current.push(t);
  }
  if (!c.atEnd()) throw c.unexpected("end of file or newline or semicolon");
  return statements;
}

function statementError(
  tokens: readonly Token[],
  message = "syntax error, unexpected string",
): SyntaxFailure {
  const first = tokens[0]!;
  return new SyntaxFailure(first.col, first.end, message);
}

function words(tokens: readonly Token[]): string {
  return tokens.map((t) => t.text).join(" ");
}

function parseComment(tokens: readonly Token[]): string {
  if (tokens.length !== 2 || !tokens[1]!.quoted) throw statementError(tokens.slice(1));
  return tokens[1]!.text;
}

function parseChainBlock(c: Cursor): { base?: SimulatedNftChain["base"]; comment?: string } {
  const out: { base?: SimulatedNftChain["base"]; comment?: string } = {};
  for (const st of blockStatements(c)) {
    const head = st[0]!.text;
    if (head === "comment") out.comment = parseComment(st);
    else if (head === "type") {
      if (st.length !== 6 || st[2]!.text !== "hook" || st[4]!.text !== "priority") throw statementError(st);
      const prio = st[5]!.text;
      const priority = /^-?\d+$/.test(prio) ? Number(prio) : NAMED_PRIORITIES[prio];
      if (priority === undefined) throw statementError([st[5]!]);
      out.base = { type: st[1]!.text, hook: st[3]!.text, priority };
    } else if (head === "policy") {
      // accepted, not kept: base chains here always accept
    } else throw statementError(st);
  }
  return out;
}

function parseSetBlock(c: Cursor, kind: "set" | "map", at: Span): Extract<Command, { kind: "set" | "map" }> {
  const out: Extract<Command, { kind: "set" | "map" }> = { kind, verb: "add", name: "" };
  for (const st of blockStatements(c)) {
    const head = st[0]!.text;
    if (head === "comment") out.comment = parseComment(st);
    else if (head === "type") {
      if (st.length < 2) throw statementError(st);
      out.type = words(st.slice(1));
      const colon = st.findIndex((t) => t.text === ":");
      if (kind === "map" && (colon < 2 || colon === st.length - 1)) throw statementError(st);
      if (kind === "set" && colon >= 0) throw statementError([st[colon]!]);
    } else if (head === "flags" && kind === "set") {
      out.flags = st
        .slice(1)
        .map((t) => t.text)
        .filter((w) => w !== ",");
      if (out.flags.length === 0) throw statementError(st);
    } else if (head === "timeout" && kind === "set") {
      const m = st.length === 2 ? /^(\d+)s?$/.exec(st[1]!.text) : null;
      if (!m) throw statementError(st.slice(1));
      out.timeoutSeconds = Number(m[1]);
    } else throw statementError(st);
  }
  if (out.type === undefined) {
    throw new SyntaxFailure(at.col, at.end, `Error: set definition does not specify key`);
  }
  return out;
}

function parseElements(c: Cursor, verb: "add" | "delete"): ElementSpec[] {
  c.expect("{");
  const out: ElementSpec[] = [];
  let parts: Token[] = [];
  const finish = (closing: Token) => {
    if (parts.length === 0) throw new SyntaxFailure(closing.col, closing.end, "syntax error, unexpected '}'");
    const colon = parts.findIndex((t) => t.text === ":" && !t.quoted);
    const keyEnd = (() => {
      const stop = parts.findIndex((t, i) => (t.text === "comment" && !t.quoted) || i === colon);
      return stop < 0 ? parts.length : stop;
    })();
    const keyTokens = parts.slice(0, keyEnd);
    if (keyTokens.length === 0) throw statementError(parts);
    const commentAt = parts.findIndex((t) => t.text === "comment" && !t.quoted);
    if (commentAt >= 0 && (!parts[commentAt + 1]?.quoted || (colon >= 0 && commentAt > colon))) {
      throw statementError(parts.slice(commentAt));
    }
    const valueTokens = colon >= 0 ? parts.slice(colon + 1) : [];
    if (colon >= 0 && valueTokens.length === 0)
      throw new SyntaxFailure(closing.col, closing.end, "syntax error");
    const span = { col: keyTokens[0]!.col, end: keyTokens[keyTokens.length - 1]!.end };
    const key = words(keyTokens);
    if (verb === "add" && colon >= 0) out.push({ key, value: words(valueTokens), span });
    else out.push({ key, span });
    parts = [];
  };
  for (;;) {
    const t = c.next("'}'");
    if (!t.quoted && t.text === "}") {
      finish(t);
      break;
    }
    if (!t.quoted && t.text === ",") {
      finish(t);
      continue;
    }
    if (!t.quoted && (t.text === "{" || t.text === ";"))
      throw new SyntaxFailure(t.col, t.end, `syntax error`);
    parts.push(t);
  }
  if (!c.atEnd()) throw c.unexpected("end of file or newline or semicolon");
  return out;
}

/** jump/goto targets and @set references of a rule's text (quoted strings skipped). */
function ruleRefs(tokens: readonly Token[]): { jumps: Ref[]; sets: Ref[] } {
  const jumps: Ref[] = [];
  const sets: Ref[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.quoted) continue;
    if ((t.text === "jump" || t.text === "goto") && tokens[i + 1] && !tokens[i + 1]!.quoted) {
      const target = tokens[i + 1]!;
      jumps.push({ name: target.text, col: target.col, end: target.end });
      i++;
    } else if (t.text.startsWith("@") && t.text.length > 1) {
      sets.push({ name: t.text.slice(1), col: t.col, end: t.end });
    }
  }
  return { jumps, sets };
}

function verdictTarget(value: string | undefined): string | undefined {
  const m = value === undefined ? null : /^(?:jump|goto) (\S+)$/.exec(value);
  return m?.[1];
}

/** nft's limit on a comment, in bytes: it refuses a longer one while parsing. */
const COMMENT_MAX_BYTES = 128;

/** The first comment over nft's limit, blamed on its quoted string as nft does. */
function tooLongComment(tokens: readonly Token[]): SyntaxFailure | undefined {
  for (let i = 1; i < tokens.length; i++) {
    const t = tokens[i]!;
    const prev = tokens[i - 1]!;
    if (!t.quoted || prev.quoted || prev.text !== "comment") continue;
    if (utf8Length(t.text) > COMMENT_MAX_BYTES)
      return new SyntaxFailure(
        t.col,
        t.end,
        `comment too long, ${COMMENT_MAX_BYTES} characters maximum allowed`,
      );
  }
  return undefined;
}

function parseLine(text: string, line: number, newer: boolean): Parsed | SyntaxFailure {
  const tokens = tokenize(text);
  if (tokens instanceof SyntaxFailure) return tokens;
  const longComment = tooLongComment(tokens);
  if (longComment) return longComment;
  const c = new Cursor(tokens, text.length);
  try {
    const verbTok = c.word("string");
    const verb = verbTok.text;
    if (verb !== "add" && verb !== "flush" && verb !== "delete") {
      c.i = 1;
      throw c.unexpected("string");
    }
    const kindTok = c.word("string");
    const kind = kindTok.text;
    if (!OBJECT_KINDS.has(kind)) {
      // nft reads "add WORD ..." as a rule for table WORD: the next word must be a chain name.
      if (c.peek() && KEYWORDS.has(c.peek()!.text)) throw c.unexpected(newer ? "string or last" : "string");
      throw new SyntaxFailure(kindTok.col, kindTok.end, "syntax error, unexpected string");
    }
    const famTok = c.word("string");
    if (!FAMILIES.has(famTok.text)) {
      c.i--;
      throw c.unexpected();
    }
    const tableTok = c.word("string");
    const tableSpan = { col: tableTok.col, end: tableTok.end };
    const base = { line, text, family: famTok.text, table: tableTok.text, tableSpan };
    const v = verb as Verb;
    if (kind === "table") {
      let comment: string | undefined;
      if (!c.atEnd()) {
        if (v !== "add") throw c.unexpected("end of file or newline or semicolon");
        for (const st of blockStatements(c)) {
          if (st[0]!.text !== "comment") throw statementError(st);
          comment = parseComment(st);
        }
      }
      return {
        ...base,
        nameSpan: tableSpan,
        cmd: { kind, verb: v, ...(comment !== undefined ? { comment } : {}) },
      };
    }
    const nameTok = c.word("string");
    const nameSpan = { col: nameTok.col, end: nameTok.end };
    const name = nameTok.text;
    switch (kind) {
      case "chain": {
        const spec = v === "add" && !c.atEnd() ? parseChainBlock(c) : {};
        if (!c.atEnd()) throw c.unexpected("end of file or newline or semicolon");
        return { ...base, nameSpan, cmd: { kind, verb: v, name, ...spec } };
      }
      case "rule": {
        if (v !== "add") throw new SyntaxFailure(nameTok.col, nameTok.end, "syntax error, unexpected string");
        const rest = tokens.slice(c.i);
        if (rest.length === 0) throw c.unexpected();
        const body = text.slice(rest[0]!.col - 1).trim();
        return { ...base, nameSpan, cmd: { kind, verb: v, name, body, ...ruleRefs(rest) } };
      }
      case "set":
      case "map": {
        if (v === "add") {
          if (c.atEnd()) throw c.unexpected("'{'");
          const spec = parseSetBlock(c, kind, nameSpan);
          return { ...base, nameSpan, cmd: { ...spec, name } };
        }
        if (!c.atEnd()) throw c.unexpected("end of file or newline or semicolon");
        return { ...base, nameSpan, cmd: { kind, verb: v, name } };
      }
      case "element": {
        if (v === "flush")
          throw new SyntaxFailure(kindTok.col, kindTok.end, "syntax error, unexpected element");
        if (c.atEnd()) throw c.unexpected("'{'");
        return { ...base, nameSpan, cmd: { kind, verb: v, name, elements: parseElements(c, v) } };
      }
    }
    throw c.unexpected();
  } catch (err) {
    if (err instanceof SyntaxFailure) return err;
    throw err;
  }
}

// ---- state ----

function tableKey(family: string, table: string): string {
  return `${family} ${table}`;
}

function cloneTable(t: SimulatedNftTable): SimulatedNftTable {
  const chains = new Map<string, SimulatedNftChain>();
  for (const [n, ch] of t.chains) chains.set(n, { ...ch, rules: [...ch.rules] });
  const sets = new Map<string, SimulatedNftSet>();
  for (const [n, s] of t.sets) sets.set(n, { ...s, flags: [...s.flags], elements: new Map(s.elements) });
  const maps = new Map<string, SimulatedNftMap>();
  for (const [n, m] of t.maps) maps.set(n, { ...m, elements: new Map(m.elements) });
  return { ...(t.comment !== undefined ? { comment: t.comment } : {}), chains, sets, maps };
}

function emptyTable(comment?: string): SimulatedNftTable {
  return {
    ...(comment !== undefined ? { comment } : {}),
    chains: new Map(),
    sets: new Map(),
    maps: new Map(),
  };
}

/** An error blamed on one input line. */
interface Blame {
  readonly line: number;
  readonly text: string;
  readonly span: Span;
  readonly message: string;
}

/** Tables as one run sees them: copies made on first write, the host's state untouched until commit. */
class Working {
  readonly copies = new Map<string, SimulatedNftTable | undefined>();
  constructor(readonly host: Map<string, SimulatedNftTable>) {}

  get(key: string): SimulatedNftTable | undefined {
    return this.copies.has(key) ? this.copies.get(key) : this.host.get(key);
  }

  writable(key: string): SimulatedNftTable | undefined {
    if (this.copies.has(key)) return this.copies.get(key);
    const t = this.host.get(key);
    const copy = t && cloneTable(t);
    this.copies.set(key, copy);
    return copy;
  }

  set(key: string, t: SimulatedNftTable | undefined): void {
    this.copies.set(key, t);
  }

  commit(): void {
    for (const [key, t] of this.copies) {
      if (t) this.host.set(key, t);
      else this.host.delete(key);
    }
  }
}

const ENOENT = "No such file or directory";
const EEXIST = "File exists";
const EBUSY = "Device or resource busy";
const EOPNOTSUPP = "Operation not supported";
const EINVAL = "Invalid argument";

function chainInUse(t: SimulatedNftTable, name: string): boolean {
  for (const ch of t.chains.values()) {
    for (const rule of ch.rules) {
      const tokens = tokenize(rule);
      if (tokens instanceof SyntaxFailure) continue;
      if (ruleRefs(tokens).jumps.some((j) => j.name === name)) return true;
    }
  }
  for (const m of t.maps.values()) {
    for (const value of m.elements.values()) if (verdictTarget(value) === name) return true;
  }
  return false;
}

function setInUse(t: SimulatedNftTable, name: string): boolean {
  for (const ch of t.chains.values()) {
    for (const rule of ch.rules) {
      if (!rule.includes(`@${name}`)) continue;
      const tokens = tokenize(rule);
      if (tokens instanceof SyntaxFailure) continue;
      if (ruleRefs(tokens).sets.some((s) => s.name === name)) return true;
    }
  }
  return false;
}

function sameFlags(a: readonly string[], b: readonly string[]): boolean {
  return [...a].sort().join(",") === [...b].sort().join(",");
}

export class SimulatedNft {
  /** Tables by "family name". */
  private readonly state = new Map<string, SimulatedNftTable>();

  /** 1.1 or later: the newer wording and userspace checks (see the header). */
  private readonly newer: boolean;

  /** Tables given as "family name" (e.g. "ip kube-proxy") start out empty. */
  constructor(
    initial: Iterable<string> = [],
    readonly version: SimulatedNftVersion = SIMULATED_NFT_VERSION,
  ) {
    for (const t of initial) this.state.set(t, emptyTable());
    this.newer = version !== "1.0.6";
  }

  /** Registers this fake as the "nft" program of `exec` (a new SimulatedExec by default). */
  install(exec: SimulatedExec = new SimulatedExec()): SimulatedExec {
    return exec.on("nft", (req) => this.handle(req));
  }

  // ---- state inspection for tests ----

  /** Every table as "family name", in creation order. */
  tableNames(): string[] {
    return [...this.state.keys()];
  }

  /** One table's live state; undefined when it does not exist. */
  tableState(family: string, table: string): SimulatedNftTable | undefined {
    return this.state.get(tableKey(family, table));
  }

  /**
   * A canonical text of one table for golden tests: chains, sets and maps sorted by name, rules in
   * order, elements sorted. "" when the table does not exist.
   */
  dump(family: string, table: string): string {
    const t = this.tableState(family, table);
    if (!t) return "";
    const q = (s: string) => `"${s}"`;
    const byName = <V>(m: Map<string, V>) => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const out: string[] = [
      `table ${family} ${table}${t.comment !== undefined ? ` comment ${q(t.comment)}` : ""}`,
    ];
    for (const [name, ch] of byName(t.chains)) {
      const spec: string[] = [];
      if (ch.base) spec.push(`type ${ch.base.type} hook ${ch.base.hook} priority ${ch.base.priority}`);
      if (ch.comment !== undefined) spec.push(`comment ${q(ch.comment)}`);
      out.push(`chain ${name}${spec.length ? ` { ${spec.join(" ; ")} }` : ""}`);
      for (const rule of ch.rules) out.push(`  ${rule}`);
    }
    for (const [name, s] of byName(t.sets)) {
      const spec = [`type ${s.type}`];
      if (s.flags.length) spec.push(`flags ${s.flags.join(",")}`);
      if (s.timeoutSeconds !== undefined) spec.push(`timeout ${s.timeoutSeconds}s`);
      if (s.comment !== undefined) spec.push(`comment ${q(s.comment)}`);
      out.push(`set ${name} { ${spec.join(" ; ")} }`);
      for (const key of [...s.elements.keys()].sort()) out.push(`  ${key}`);
    }
    for (const [name, m] of byName(t.maps)) {
      const spec = [`type ${m.type}`];
      if (m.comment !== undefined) spec.push(`comment ${q(m.comment)}`);
      out.push(`map ${name} { ${spec.join(" ; ")} }`);
      for (const [key, value] of byName(m.elements)) out.push(`  ${key} : ${value}`);
    }
    return `${out.join("\n")}\n`;
  }

  // ---- the nft command line ----

  handle(req: TextExecRequest): ExecResult {
    let json = false;
    let terse = false;
    let check = false;
    let file: string | undefined;
    const positional: string[] = [];
    const args = req.args;
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (a === "-j" || a === "--json") json = true;
      else if (a === "-t" || a === "--terse") terse = true;
      else if (a === "-c" || a === "--check") check = true;
      else if (a === "-f" || a === "--file") file = args[++i];
      else if (a === "-v" || a === "--version")
        return ok(`nftables v${this.version} (${SIMULATED_NFT_RELEASES[this.version]})\n`);
      else if (a.startsWith("-")) return fail(1, `nft: unrecognized option '${a}'\n`);
      else positional.push(a);
    }
    if (file !== undefined) {
      if (file !== "-") return fail(1, `Error: Could not open file "${file}": ${ENOENT}\n`);
      return this.script(req.stdin ?? "", check, "/dev/stdin");
    }
    const [verb, what, family] = positional;
    if (verb === "list" && what === "tables") {
      const names = this.tableNames().filter((t) => family === undefined || t.startsWith(`${family} `));
      return ok(names.map((t) => `table ${t}\n`).join(""));
    }
    if (verb === "list" && (what === "chains" || what === "sets" || what === "maps")) {
      if (positional.length !== 3 || !FAMILIES.has(family!)) {
        return fail(
          1,
          "Error: syntax error, unexpected string, expecting end of file or newline or semicolon\n",
        );
      }
      if (json) return ok(this.listJson(what, family!, terse));
      if (what === "chains") return ok(this.listChainsText(family!));
      return fail(1, "fake nft: only chains are listed as text\n");
    }
    if (verb === "list" && what === "table" && positional.length === 4) {
      const t = this.tableState(family!, positional[3]!);
      if (!t) return fail(1, `Error: No such file or directory\nlist table ${family} ${positional[3]}\n`);
      return ok(renderNftListing(family!, positional[3]!, t));
    }
    if (positional.length === 0) return fail(1, "Error: syntax error, unexpected end of file\n");
    return this.script(positional.join(" "), check, undefined);
  }

  /** Runs nft input: every line or nothing. `source` names the input in error locations. */
  private script(input: string, check: boolean, source: string | undefined): ExecResult {
    const lines = input.split("\n");
    const parsed: Parsed[] = [];
    const syntax: Blame[] = [];
    for (let i = 0; i < lines.length; i++) {
      const text = lines[i]!;
      if (text.trim() === "" || text.trim().startsWith("#")) continue;
      const p = parseLine(text, i + 1, this.newer);
      if (p instanceof SyntaxFailure) {
        syntax.push({ line: i + 1, text, span: p, message: p.message.replace(/^Error: /, "") });
      } else parsed.push(p);
    }
    if (syntax.length) return this.report(syntax, source);
    const evalErrors = this.evaluate(parsed);
    if (evalErrors.length) return this.report(evalErrors, source);
    const work = new Working(this.state);
    const refused: Blame[] = [];
    for (const p of parsed) {
      const refusal = this.apply(work, p);
      if (refusal) refused.push({ ...refusal, message: `Could not process rule: ${refusal.message}` });
    }
    if (refused.length) return this.report(refused, source);
    if (!check) work.commit();
    return ok();
  }

  private report(errors: readonly Blame[], source: string | undefined): ExecResult {
    const out: string[] = [];
    for (const e of errors) {
      const where = source === undefined ? "" : `${source}:${e.line}:${e.span.col}-${e.span.end}: `;
      out.push(
        `${where}Error: ${e.message}`,
        e.text,
        `${" ".repeat(e.span.col - 1)}${"^".repeat(Math.max(1, e.span.end - e.span.col + 1))}`,
      );
    }
    return fail(1, `${out.join("\n")}\n`);
  }

  /**
   * nft's evaluation pass: lines that name a table, set or map its cache (the host's state plus
   * what earlier lines add or delete) does not hold.
   */
  private evaluate(parsed: readonly Parsed[]): Blame[] {
    // undefined: a table an earlier line deleted.
    const tables = new Map<string, Map<string, "set" | "map"> | undefined>();
    const cached = (key: string): Map<string, "set" | "map"> | undefined => {
      if (!tables.has(key)) {
        const t = this.state.get(key);
        if (!t) return undefined;
        const named = new Map<string, "set" | "map">();
        for (const n of t.sets.keys()) named.set(n, "set");
        for (const n of t.maps.keys()) named.set(n, "map");
        tables.set(key, named);
      }
      return tables.get(key);
    };
    const errors: Blame[] = [];
    const blame = (p: Parsed, span: Span, message: string) =>
      errors.push({ line: p.line, text: p.text, span, message });
    for (const p of parsed) {
      const key = tableKey(p.family, p.table);
      const named = cached(key);
      const { cmd } = p;
      switch (cmd.kind) {
        case "table":
          if (cmd.verb === "add" && !named) tables.set(key, new Map());
          if (cmd.verb === "delete") tables.set(key, undefined);
          break;
        case "chain": {
          if (cmd.verb === "add" && !named) blame(p, p.tableSpan, ENOENT);
          const redeclared = this.newer && cmd.verb === "add" && cmd.base && this.redeclaredBase(p, cmd.base);
          if (redeclared)
            blame(
              p,
              redeclared,
              `Chain "${cmd.name}" already exists in table ${p.family} '${p.table}' with different declaration`,
            );
          break;
        }
        case "rule":
          if (!named) break;
          for (const ref of cmd.sets) if (!named.has(ref.name)) blame(p, ref, ENOENT);
          break;
        case "set":
        case "map":
          if (!named) {
            blame(p, p.tableSpan, ENOENT);
            break;
          }
          if (cmd.verb === "add" && !named.has(cmd.name)) named.set(cmd.name, cmd.kind);
          else if (cmd.verb === "flush" && named.get(cmd.name) !== cmd.kind) blame(p, p.nameSpan, ENOENT);
          else if (cmd.verb === "delete") named.delete(cmd.name);
          break;
        case "element": {
          if (!named) {
            blame(p, p.tableSpan, ENOENT);
            break;
          }
          const kind = named.get(cmd.name);
          if (!kind) blame(p, p.nameSpan, ENOENT);
          else if (kind === "set" && cmd.elements.some((e) => e.value !== undefined)) {
            errors.push({ line: p.line, text: p.text, span: p.nameSpan, message: "set is not a map" });
          }
          break;
        }
      }
    }
    return errors;
  }

  /** The span of a base chain's type..priority when the host holds that chain declared otherwise. */
  private redeclaredBase(
    p: Parsed,
    base: { type: string; hook: string; priority: number },
  ): Span | undefined {
    if (p.cmd.kind !== "chain") return undefined;
    const held = this.state.get(tableKey(p.family, p.table))?.chains.get(p.cmd.name);
    if (!held?.base) return undefined;
    const same =
      held.base.type === base.type && held.base.hook === base.hook && held.base.priority === base.priority;
    if (same) return undefined;
    const m = /\{\s*(type\s.*?priority\s+\S+?)\s*[;}]/.exec(p.text);
    if (!m || m.index === undefined) return { col: 1, end: p.text.length };
    const col = p.text.indexOf(m[1]!, m.index) + 1;
    return { col, end: col + m[1]!.length - 1 };
  }

  /** The kernel's answer to one line, applied to the working copy; the refusal when it refuses. */
  private apply(work: Working, p: Parsed): Blame | undefined {
    const refuse = (span: Span, message: string): Blame => ({ line: p.line, text: p.text, span, message });
    const key = tableKey(p.family, p.table);
    const { cmd } = p;
    if (cmd.kind === "table") {
      const exists = work.get(key) !== undefined;
      if (cmd.verb === "add") {
        if (!exists) work.set(key, emptyTable(cmd.comment));
        return undefined;
      }
      if (!exists) return refuse(p.tableSpan, ENOENT);
      if (cmd.verb === "delete") work.set(key, undefined);
      else for (const ch of work.writable(key)!.chains.values()) ch.rules = [];
      return undefined;
    }
    const t = work.get(key) && work.writable(key);
    if (!t) return refuse(p.tableSpan, ENOENT);
    switch (cmd.kind) {
      case "chain": {
        const ch = t.chains.get(cmd.name);
        if (cmd.verb === "add") {
          if (!ch) {
            t.chains.set(cmd.name, {
              ...(cmd.base ? { base: cmd.base } : {}),
              ...(cmd.comment !== undefined ? { comment: cmd.comment } : {}),
              rules: [],
            });
            return undefined;
          }
          if (!cmd.base) return undefined;
          if (!ch.base) return refuse(p.nameSpan, EEXIST);
          const same =
            ch.base.type === cmd.base.type &&
            ch.base.hook === cmd.base.hook &&
            ch.base.priority === cmd.base.priority;
          return same ? undefined : refuse({ col: 1, end: p.text.length }, EOPNOTSUPP);
        }
        if (!ch) return refuse(p.nameSpan, ENOENT);
        if (cmd.verb === "flush") ch.rules = [];
        else {
          // References from the chain's own rules go with it.
          const own = ch.rules;
          ch.rules = [];
          if (chainInUse(t, cmd.name)) {
            ch.rules = own;
            return refuse(p.nameSpan, EBUSY);
          }
          t.chains.delete(cmd.name);
        }
        return undefined;
      }
      case "rule": {
        const ch = t.chains.get(cmd.name);
        if (!ch) return refuse(p.nameSpan, ENOENT);
        for (const j of cmd.jumps) {
          const target = t.chains.get(j.name);
          if (!target) return refuse(j, ENOENT);
          if (target.base) return refuse(j, EOPNOTSUPP);
        }
        for (const s of cmd.sets) if (!t.sets.has(s.name) && !t.maps.has(s.name)) return refuse(s, ENOENT);
        ch.rules.push(cmd.body);
        return undefined;
      }
      case "set":
      case "map": {
        const set = t.sets.get(cmd.name);
        const map = t.maps.get(cmd.name);
        if (cmd.verb === "add") {
          if (cmd.kind === "set") {
            if (map) return refuse(p.nameSpan, EEXIST);
            if (!set) {
              t.sets.set(cmd.name, {
                type: cmd.type!,
                flags: cmd.flags ?? [],
                ...(cmd.timeoutSeconds !== undefined ? { timeoutSeconds: cmd.timeoutSeconds } : {}),
                ...(cmd.comment !== undefined ? { comment: cmd.comment } : {}),
                elements: new Map(),
              });
              return undefined;
            }
            if (set.type !== cmd.type || !sameFlags(set.flags, cmd.flags ?? []))
              return refuse(p.nameSpan, EEXIST);
            // The kernel updates an existing set's default timeout (and nothing else).
            if (cmd.timeoutSeconds !== undefined) set.timeoutSeconds = cmd.timeoutSeconds;
            return undefined;
          }
          if (set) return refuse(p.nameSpan, EEXIST);
          if (!map) {
            t.maps.set(cmd.name, {
              type: cmd.type!,
              ...(cmd.comment !== undefined ? { comment: cmd.comment } : {}),
              elements: new Map(),
            });
            return undefined;
          }
          return map.type === cmd.type ? undefined : refuse(p.nameSpan, EEXIST);
        }
        const found = set ?? map;
        if (!found) return refuse(p.nameSpan, ENOENT);
        if (cmd.verb === "flush") {
          found.elements.clear();
          return undefined;
        }
        // delete set and delete map both remove whichever of the two has the name.
        if (setInUse(t, cmd.name)) return refuse(p.nameSpan, EBUSY);
        t.sets.delete(cmd.name);
        t.maps.delete(cmd.name);
        return undefined;
      }
      case "element": {
        const set = t.sets.get(cmd.name);
        const map = t.maps.get(cmd.name);
        if (!set && !map) return refuse(p.nameSpan, ENOENT);
        for (const e of cmd.elements) {
          if (cmd.verb === "delete") {
            const elements = (set ?? map)!.elements;
            if (!elements.has(e.key)) return refuse(e.span, ENOENT);
            elements.delete(e.key);
            continue;
          }
          if (set) {
            set.elements.set(e.key, undefined);
            continue;
          }
          if (e.value === undefined) return refuse(e.span, EINVAL);
          const target = verdictTarget(e.value);
          if (target !== undefined && !t.chains.has(target)) return refuse(e.span, ENOENT);
          const had = map!.elements.get(e.key);
          if (had !== undefined && had !== e.value) return refuse(e.span, EEXIST);
          map!.elements.set(e.key, e.value);
        }
        return undefined;
      }
    }
  }

  /** `nft --json [--terse] list chains|sets|maps FAMILY`, shaped like nft 1.0.6's. */
  /** `nft list chains FAMILY`: each table, its chains, a base chain's hook line (numeric priority). */
  private listChainsText(family: string): string {
    const out: string[] = [];
    for (const [key, t] of this.state) {
      const space = key.indexOf(" ");
      if (key.slice(0, space) !== family) continue;
      out.push(`table ${key} {`);
      for (const [name, ch] of t.chains) {
        out.push(`\tchain ${name} {`);
        if (ch.base) {
          const { type, hook, priority } = ch.base;
          out.push(`\t\ttype ${type} hook ${hook} priority ${priority}; policy accept;`);
        }
        out.push("\t}");
      }
      out.push("}");
    }
    return out.length ? `${out.join("\n")}\n` : "";
  }

  private listJson(what: "chains" | "sets" | "maps", family: string, terse: boolean): string {
    const items: unknown[] = [
      {
        metainfo: {
          version: this.version,
          release_name: SIMULATED_NFT_RELEASES[this.version],
          json_schema_version: 1,
        },
      },
    ];
    let handle = 0;
    for (const [key, t] of this.state) {
      const space = key.indexOf(" ");
      if (key.slice(0, space) !== family) continue;
      const table = key.slice(space + 1);
      if (what === "chains") {
        for (const [name, ch] of t.chains) {
          const base = ch.base && {
            type: ch.base.type,
            hook: ch.base.hook,
            prio: ch.base.priority,
            policy: "accept",
          };
          items.push({ chain: { family, table, name, handle: ++handle, ...base } });
        }
      } else if (what === "sets") {
        for (const [name, s] of t.sets) {
          const set: Record<string, unknown> = {
            family,
            name,
            table,
            type: jsonType(s.type),
            handle: ++handle,
          };
          if (s.comment !== undefined) set.comment = s.comment;
          // 1.0.6 leaves "dynamic" out of its JSON; 1.1 lists every flag, in the kernel's bit order.
          const flags = this.newer
            ? [...s.flags].sort((a, b) => SET_FLAG_BITS.indexOf(a) - SET_FLAG_BITS.indexOf(b))
            : s.flags.filter((f) => f !== "dynamic");
          if (flags.length) set.flags = flags;
          if (s.timeoutSeconds !== undefined) set.timeout = s.timeoutSeconds;
          if (!terse && s.elements.size) set.elem = [...s.elements.keys()].map(jsonKey);
          items.push({ set });
        }
      } else {
        for (const [name, m] of t.maps) {
          const [keyType, valueType] = m.type.split(" : ");
          const map: Record<string, unknown> = {
            family,
            name,
            table,
            type: jsonType(keyType!),
            handle: ++handle,
            map: valueType,
          };
          if (m.comment !== undefined) map.comment = m.comment;
          if (!terse && m.elements.size)
            map.elem = [...m.elements].map(([k, v]) => [jsonKey(k), jsonValue(v)]);
          items.push({ map });
        }
      }
    }
    return `${JSON.stringify({ nftables: items })}\n`;
  }
}

function jsonType(type: string): string | string[] {
  const parts = type.split(" . ");
  return parts.length === 1 ? parts[0]! : parts;
}

function jsonScalar(part: string): string | number {
  return /^\d+$/.test(part) ? Number(part) : part;
}

function jsonKey(key: string): unknown {
  const parts = key.split(" . ");
  return parts.length === 1 ? jsonScalar(parts[0]!) : { concat: parts.map(jsonScalar) };
}

function jsonValue(value: string): unknown {
  const target = verdictTarget(value);
  if (target !== undefined) return { [value.split(" ")[0]!]: { target } };
  if (/^(accept|drop|continue|return)$/.test(value)) return { [value]: null };
  return jsonKey(value);
}

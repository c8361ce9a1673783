// For the packet tracer (tracer.ts): reads one nftables rule, as the fake nft holds it, into
// the matches and statements it is made of. Only the forms the proxier writes (and upstream's
// layout uses) are known; anything else throws UnsupportedRuleError, so that a rule the tracer
// cannot evaluate never passes unnoticed.

/** What a packet field is read from. */
export type Selector = "saddr" | "daddr" | "l4proto" | "dport";

export type Verdict =
  | { readonly kind: "accept" | "drop" | "reject" | "return" }
  | { readonly kind: "jump" | "goto"; readonly chain: string };

/** An address, a CIDR, a protocol name or a port, as written in a rule or an element. */
export type Literal = string;

export type Term =
  /** `SEL [!=] VALUE` or `SEL [!=] { V, ... }`. */
  | {
      readonly kind: "compare";
      readonly selector: Selector;
      readonly negated: boolean;
      readonly values: Literal[];
    }
  /** `SEL . SEL ... [!=] @set`. */
  | {
      readonly kind: "lookup";
      readonly selectors: Selector[];
      readonly negated: boolean;
      readonly set: string;
    }
  /** `SEL . SEL ... vmap @map`. */
  | { readonly kind: "vmap"; readonly selectors: Selector[]; readonly map: string }
  /** `fib saddr|daddr type [!=] local`. */
  | { readonly kind: "fib-local"; readonly of: "saddr" | "daddr"; readonly negated: boolean }
  | { readonly kind: "ct-state"; readonly states: string[] }
  | { readonly kind: "ct-status"; readonly statuses: string[] }
  /** `mark and MASK ==|!= VALUE`. */
  | { readonly kind: "mark-test"; readonly mask: number; readonly negated: boolean; readonly value: number }
  /** `numgen random mod N [offset O] VALUE`. */
  | { readonly kind: "numgen"; readonly mod: number; readonly offset: number; readonly value: number }
  /** `numgen random mod N [offset O] vmap { K : VERDICT , ... }`. */
  | {
      readonly kind: "numgen-vmap";
      readonly mod: number;
      readonly offset: number;
      readonly entries: ReadonlyMap<number, Verdict>;
    }
  | { readonly kind: "mark-set"; readonly op: "or" | "xor" | "and" | "set"; readonly value: number }
  /** `dnat [ip|ip6] to ADDR[:PORT]`. */
  | { readonly kind: "dnat"; readonly addr: string; readonly port: number | undefined }
  /** `dnat ip|ip6 addr . port to numgen random mod N [offset O] map { K : ADDR . PORT , ... }`. */
  | {
      readonly kind: "dnat-numgen-map";
      readonly mod: number;
      readonly offset: number;
      readonly entries: ReadonlyMap<number, { readonly addr: string; readonly port: number }>;
    }
  | { readonly kind: "masquerade" }
  | { readonly kind: "verdict"; readonly verdict: Verdict }
  /** Statements that do not change where a new connection goes (counter, update @set). */
  | { readonly kind: "no-op"; readonly text: string };

export class UnsupportedRuleError extends Error {
  constructor(rule: string, at: string, why: string) {
    super(`packet tracer: ${why} at "${at}" in rule: ${rule}`);
    this.name = "UnsupportedRuleError";
  }
}

const PUNCT = new Set(["{", "}", ","]);

/** Words, quoted strings (quotes kept) and the punctuation of anonymous sets and maps. */
function tokenize(rule: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < rule.length) {
    const c = rule[i]!;
    if (c === " " || c === "\t") {
      i++;
    } else if (c === '"') {
      const close = rule.indexOf('"', i + 1);
      if (close < 0) throw new UnsupportedRuleError(rule, rule.slice(i), "unterminated string");
      out.push(rule.slice(i, close + 1));
      i = close + 1;
    } else if (PUNCT.has(c)) {
      out.push(c);
      i++;
    } else {
      let j = i;
      while (j < rule.length && !' \t"'.includes(rule[j]!) && !PUNCT.has(rule[j]!)) j++;
      out.push(rule.slice(i, j));
      i = j;
    }
  }
  return out;
}

const VERDICT_WORDS = new Set(["accept", "drop", "reject", "return"]);

class Reader {
  private i = 0;
  constructor(
    private readonly rule: string,
    private readonly tokens: readonly string[],
    private readonly ipX: "ip" | "ip6",
  ) {}

  get done(): boolean {
    return this.i >= this.tokens.length;
  }

  peek(offset = 0): string | undefined {
    return this.tokens[this.i + offset];
  }

  next(what: string): string {
    const t = this.tokens[this.i];
    if (t === undefined) throw this.fail(`expected ${what}, found the end`);
    this.i++;
    return t;
  }

  expect(word: string): void {
    const t = this.next(`"${word}"`);
    if (t !== word) throw this.fail(`expected "${word}"`, t);
  }

  fail(why: string, at?: string): UnsupportedRuleError {
    return new UnsupportedRuleError(this.rule, at ?? this.tokens.slice(this.i).join(" "), why);
  }

  number(what: string): number {
    const t = this.next(what);
    const n = Number(t);
    if (!/^(0x[0-9a-fA-F]+|\d+)$/.test(t) || !Number.isSafeInteger(n)) throw this.fail(`expected ${what}`, t);
    return n;
  }

  /** A selector at the cursor, or undefined (cursor unchanged). */
  selector(): Selector | undefined {
    const [a, b] = [this.peek(), this.peek(1)];
    if ((a === "ip" || a === "ip6") && (b === "saddr" || b === "daddr")) {
      if (a !== this.ipX) throw this.fail(`an ${a} match in an ${this.ipX} table`);
      this.i += 2;
      return b;
    }
    if (a === "meta" && b === "l4proto") {
      this.i += 2;
      return "l4proto";
    }
    if (a === "th" && b === "dport") {
      this.i += 2;
      return "dport";
    }
    return undefined;
  }

  /** `{ a, b, ... }` (the opening brace already read). */
  anonymousSet(): string[] {
    const out: string[] = [];
    for (;;) {
      const t = this.next("a set element or }");
      if (t === "}") break;
      if (t === ",") continue;
      if (t === "{" || t === ":" || t === ".") throw this.fail("a nested or concatenated anonymous set", t);
      out.push(t);
    }
    if (out.length === 0) throw this.fail("an empty anonymous set");
    return out;
  }

  /** `{ K : V... , ... }` (the opening brace already read): each entry's key and value words. */
  anonymousMap(): [number, string[]][] {
    const out: [number, string[]][] = [];
    let key: number | undefined;
    let value: string[] = [];
    const finish = () => {
      if (key === undefined || value.length === 0) throw this.fail("a map entry without key or value");
      out.push([key, value]);
      key = undefined;
      value = [];
    };
    for (;;) {
      if (key === undefined) {
        key = this.number("a map key");
        this.expect(":");
        continue;
      }
      const t = this.next("a map value, , or }");
      if (t === "," || t === "}") {
        finish();
        if (t === "}") return out;
      } else value.push(t);
    }
  }

  verdict(): Verdict | undefined {
    const t = this.peek();
    if (t !== undefined && VERDICT_WORDS.has(t)) {
      this.i++;
      return { kind: t as "accept" | "drop" | "reject" | "return" };
    }
    if (t === "jump" || t === "goto") {
      this.i++;
      return { kind: t, chain: this.next("a chain name") };
    }
    return undefined;
  }

  /** `random mod N [offset O]` after "numgen". */
  numgenHead(): { mod: number; offset: number } {
    this.expect("random");
    this.expect("mod");
    const mod = this.number("a modulus");
    let offset = 0;
    if (this.peek() === "offset") {
      this.i++;
      offset = this.number("an offset");
    }
    return { mod, offset };
  }
}

/** "10.0.0.1:80" / "[fd00::1]:80" / "10.0.0.1" -> address and port. */
function dnatTarget(r: Reader, text: string): { addr: string; port: number | undefined } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (v6) return { addr: v6[1]!, port: v6[2] === undefined ? undefined : Number(v6[2]) };
  const parts = text.split(":");
  if (parts.length === 2 && /^\d+$/.test(parts[1]!)) return { addr: parts[0]!, port: Number(parts[1]) };
  if (parts.length === 1 || (parts.length > 2 && !text.includes("."))) return { addr: text, port: undefined };
  throw r.fail("an unreadable DNAT target", text);
}

/** The terms of `rule` (the text after the chain name), in order; throws on unknown syntax. */
export function parseRule(rule: string, ipX: "ip" | "ip6"): Term[] {
  const r = new Reader(rule, tokenize(rule), ipX);
  const terms: Term[] = [];
  while (!r.done) terms.push(term(r, ipX));
  return terms;
}

function term(r: Reader, ipX: "ip" | "ip6"): Term {
  const first = r.selector();
  if (first) {
    const selectors = [first];
    while (r.peek() === ".") {
      r.next(".");
      const s = r.selector();
      if (!s) throw r.fail("expected a selector after .");
      selectors.push(s);
    }
    let negated = false;
    if (r.peek() === "!=") {
      r.next("!=");
      negated = true;
    } else if (r.peek() === "==") r.next("==");
    const t = r.next("a value, a set or vmap");
    if (t === "vmap") {
      if (negated) throw r.fail("a negated vmap", t);
      const ref = r.next("@map");
      if (!ref.startsWith("@")) throw r.fail("only named verdict maps", ref);
      return { kind: "vmap", selectors, map: ref.slice(1) };
    }
    if (t.startsWith("@")) return { kind: "lookup", selectors, negated, set: t.slice(1) };
    if (selectors.length > 1) throw r.fail("a concatenation compared with a literal", t);
    const values = t === "{" ? r.anonymousSet() : [t];
    return { kind: "compare", selector: first, negated, values };
  }

  const word = r.peek();
  const verdict = r.verdict();
  if (verdict) return { kind: "verdict", verdict };
  r.next("a statement");
  switch (word) {
    case "fib": {
      const of = r.next("saddr or daddr");
      if (of !== "saddr" && of !== "daddr") throw r.fail("fib of something but saddr/daddr", of);
      r.expect("type");
      let negated = false;
      if (r.peek() === "!=") {
        r.next("!=");
        negated = true;
      }
      const type = r.next("an address type");
      if (type !== "local") throw r.fail("fib types other than local", type);
      return { kind: "fib-local", of, negated };
    }
    case "ct": {
      const key = r.next("state or status");
      if (key !== "state" && key !== "status") throw r.fail("ct keys other than state/status", key);
      const values = r.next("a value").split(",");
      return key === "state" ? { kind: "ct-state", states: values } : { kind: "ct-status", statuses: values };
    }
    case "meta":
      // nft's listing spells the mark `meta mark`, with & | ^ for and/or/xor.
      r.expect("mark");
      return markTerm(r);
    case "mark":
      return markTerm(r);
    case "numgen": {
      const { mod, offset } = r.numgenHead();
      if (r.peek() === "vmap") {
        r.next("vmap");
        r.expect("{");
        const entries = new Map<number, Verdict>();
        for (const [key, words] of r.anonymousMap()) {
          const v = verdictOf(words);
          if (!v) throw r.fail("a vmap value that is not a verdict", words.join(" "));
          entries.set(key, v);
        }
        return { kind: "numgen-vmap", mod, offset, entries };
      }
      return { kind: "numgen", mod, offset, value: r.number("a value") };
    }
    case "dnat": {
      let t = r.next("to or a family");
      if (t === ipX) t = r.next("to or addr");
      if (t === "addr") {
        r.expect(".");
        r.expect("port");
        r.expect("to");
        r.expect("numgen");
        const { mod, offset } = r.numgenHead();
        r.expect("map");
        r.expect("{");
        const entries = new Map<number, { addr: string; port: number }>();
        for (const [key, words] of r.anonymousMap()) {
          if (words.length !== 3 || words[1] !== "." || !/^\d+$/.test(words[2]!))
            throw r.fail("a DNAT map value that is not ADDR . PORT", words.join(" "));
          entries.set(key, { addr: words[0]!, port: Number(words[2]) });
        }
        return { kind: "dnat-numgen-map", mod, offset, entries };
      }
      if (t !== "to") throw r.fail('expected "to"', t);
      return { kind: "dnat", ...dnatTarget(r, r.next("a DNAT target")) };
    }
    case "masquerade": {
      while (r.peek() === "fully-random" || r.peek() === "random" || r.peek() === "persistent")
        r.next("a flag");
      return { kind: "masquerade" };
    }
    case "counter": {
      if (r.peek() === "name") {
        r.next("name");
        r.next("a counter name");
      } else if (r.peek() === "packets") {
        r.next("packets");
        r.number("packets");
        r.expect("bytes");
        r.number("bytes");
      }
      return { kind: "no-op", text: "counter" };
    }
    case "update": {
      const set = r.next("@set");
      if (!set.startsWith("@")) throw r.fail("an update of something but a named set", set);
      r.expect("{");
      const key = [r.next("a selector"), r.next("a selector")];
      if (key[0] !== ipX || key[1] !== "saddr")
        throw r.fail("an update key other than the source", key.join(" "));
      r.expect("}");
      return { kind: "no-op", text: `update ${set}` };
    }
    case "comment": {
      const text = r.next("a comment");
      if (!text.startsWith('"') || !r.done) throw r.fail("a comment that does not end the rule", text);
      return { kind: "no-op", text: "comment" };
    }
    default:
      throw r.fail("unknown statement", word);
  }
}

const MARK_OPS: Readonly<Record<string, "or" | "xor" | "and">> = {
  or: "or",
  "|": "or",
  xor: "xor",
  "^": "xor",
  and: "and",
  "&": "and",
};

/** After `mark` (or `meta mark`): a test `and MASK ==|!= VALUE` or a `set`. */
function markTerm(r: Reader): Term {
  if (r.peek() === "set") {
    r.next("set");
    if (r.peek() === "meta") r.next("meta");
    if (r.peek() !== "mark") return { kind: "mark-set", op: "set", value: r.number("a mark") };
    r.expect("mark");
    const word = r.next("or, xor or and");
    const op = MARK_OPS[word];
    if (!op) throw r.fail("a mark operation", word);
    return { kind: "mark-set", op, value: r.number("a mark") };
  }
  const and = r.next("and");
  if (MARK_OPS[and] !== "and") throw r.fail('expected "and"', and);
  const mask = r.number("a mask");
  const cmp = r.next("== or !=");
  if (cmp !== "==" && cmp !== "!=") throw r.fail("a mark comparison", cmp);
  return { kind: "mark-test", mask, negated: cmp === "!=", value: r.number("a value") };
}

function verdictOf(words: readonly string[]): Verdict | undefined {
  const [w, chain] = words;
  if (words.length === 1 && w !== undefined && VERDICT_WORDS.has(w))
    return { kind: w as "accept" | "drop" | "reject" | "return" };
  if (words.length === 2 && (w === "jump" || w === "goto") && chain) return { kind: w, chain };
  return undefined;
}

/** A verdict map element's value ("goto chain", "drop"), as the fake nft stores it. */
export function parseVerdict(text: string): Verdict {
  const v = verdictOf(text.trim().split(/\s+/));
  if (!v) throw new UnsupportedRuleError(text, text, "a verdict map value that is not a verdict");
  return v;
}

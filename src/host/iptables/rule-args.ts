// Rule text <-> argument lists, the way iptables-restore splits its input and iptables-save
// prints it. The fake stores rules in this canonical form so `-C` and restore agree on equality.

import { cutToUtf8Bytes } from "../comment-text.ts";
import { COMMENT_MAX_BYTES } from "./restore-text.ts";

/**
 * Splits one restore line as iptables-restore 1.8.x does, reading it with the newline that ends
 * it: blanks, tabs and newlines separate (a carriage return does not); a `"` opens a quoted
 * part, inside which a backslash takes the next character literally; the closing `"` ends the
 * argument (`"ab"cd` is two). A quote left open runs to the end and keeps the newline, as does
 * a backslash just before it. Outside quotes a backslash is an ordinary character, and a NUL
 * ends the line (the tool reads C strings).
 */
export function splitRuleLine(line: string): string[] {
  const out: string[] = [];
  const text = line.endsWith("\n") ? line : `${line}\n`;
  let cur = "";
  let inArg = false;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "\0") break;
    if (quoted) {
      if (ch === "\\") {
        if (i + 1 < text.length) cur += text[++i];
      } else if (ch === '"') {
        out.push(cur);
        cur = "";
        inArg = false;
        quoted = false;
      } else cur += ch;
      continue;
    }
    if (ch === '"') {
      quoted = true;
      inArg = true;
    } else if (ch === " " || ch === "\t" || ch === "\n") {
      if (inArg) out.push(cur);
      cur = "";
      inArg = false;
    } else {
      cur += ch;
      inArg = true;
    }
  }
  if (inArg) out.push(cur);
  return out;
}

// iptables-save prints a string bare only when it is made of these characters.
const BARE = /^[A-Za-z0-9_-]+$/;

/** A string argument as iptables-save prints it: bare when safe, else quoted with \" \\ \' escaped. */
export function quoteSaveString(value: string): string {
  if (BARE.test(value)) return value;
  return `"${value.replace(/["\\']/g, (c) => `\\${c}`)}"`;
}

// Options whose value iptables-save prints through its string quoting (comments above all).
const STRING_OPTIONS = new Set(["--comment"]);
const ADDRESS_OPTIONS = new Set(["-s", "--source", "-d", "--destination"]);

/**
 * The canonical text of a rule's arguments: comment strings cut to the 255 bytes the kernel
 * keeps (iptables 1.8.9 cuts silently; here at a character boundary) and quoted as
 * iptables-save does, bare addresses given their host prefix (/32 or /128), and anything else
 * with whitespace quoted.
 */
export function formatRuleArgs(args: readonly string[], family: "IPv4" | "IPv6" = "IPv4"): string {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const prev = i > 0 ? args[i - 1]! : "";
    if (STRING_OPTIONS.has(prev)) out.push(quoteSaveString(cutToUtf8Bytes(a, COMMENT_MAX_BYTES)));
    else if (ADDRESS_OPTIONS.has(prev)) out.push(withHostPrefix(a, family));
    else out.push(/[\s"]/.test(a) || a === "" ? `"${a.replace(/["\\]/g, (c) => `\\${c}`)}"` : a);
  }
  return out.join(" ");
}

function withHostPrefix(addr: string, family: "IPv4" | "IPv6"): string {
  if (addr.includes("/")) return addr;
  return `${addr}/${family === "IPv6" || addr.includes(":") ? 128 : 32}`;
}

/** The jump (-j) or goto (-g) target of a rule, if any (a comment that reads "-j" is no jump). */
export function ruleTarget(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length - 1; i++) {
    const a = args[i]!;
    if (STRING_OPTIONS.has(a)) i++;
    else if (a === "-j" || a === "--jump" || a === "-g" || a === "--goto") return args[i + 1];
  }
  return undefined;
}

/**
 * Splits a rule as iptables-save prints it, as a shell would: double quotes group and a
 * backslash escapes the next character. For reading saved rules quickly (drift checks, the
 * tracer); what iptables-restore itself makes of a line is splitRuleLine's contract.
 */
export function splitSavedRule(text: string): string[] {
  if (text.includes("\\")) return escapedTokens(text);
  // No escapes: quoted runs and plain runs are sliced, not built a character at a time.
  const out: string[] = [];
  let cur = "";
  let inToken = false;
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      let j = text.indexOf('"', i + 1);
      if (j < 0) j = n;
      cur += text.slice(i + 1, j);
      inToken = true;
      i = j + 1;
    } else if (c === 32 || c === 9) {
      if (inToken) out.push(cur);
      cur = "";
      inToken = false;
      i++;
    } else {
      let j = i + 1;
      while (j < n) {
        const d = text.charCodeAt(j);
        if (d === 32 || d === 9 || d === 34) break;
        j++;
      }
      cur += text.slice(i, j);
      inToken = true;
      i = j;
    }
  }
  if (inToken) out.push(cur);
  return out;
}

function escapedTokens(text: string): string[] {
  const out: string[] = [];
  let cur = "";
  let inToken = false;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "\\" && i + 1 < text.length) {
      cur += text[++i];
      inToken = true;
    } else if (c === '"') {
      quoted = !quoted;
      inToken = true;
    } else if (!quoted && (c === " " || c === "\t")) {
      if (inToken) out.push(cur);
      cur = "";
      inToken = false;
    } else {
      cur += c;
      inToken = true;
    }
  }
  if (inToken) out.push(cur);
  return out;
}

// One iptables rule's arguments in a form that does not depend on who printed them: the rule as
// a restore input wrote it and the same rule as iptables-save prints it give the same key.
// iptables-save reorders matches (-d before -p before -m ...), adds the defaults it filled in
// (/32 on an address, -m tcp with --dport, REJECT's --reject-with, recent's --mask and
// --rsource), prints
// MARK's --or-mark and --xor-mark as --set-xmark, marks without leading zeros, and
// probabilities with eleven decimals.

import { splitSavedRule } from "../../host/iptables/rule-args.ts";

const LONG_NAMES: Readonly<Record<string, string>> = {
  "--source": "-s",
  "--destination": "-d",
  "--protocol": "-p",
  "--jump": "-j",
  "--goto": "-g",
  "--in-interface": "-i",
  "--out-interface": "-o",
  "--match": "-m",
};

const PORT_MATCHES = new Set(["tcp", "udp", "sctp"]);
const DEFAULT_REJECTS = new Set(["icmp-port-unreachable", "icmp6-port-unreachable"]);
const ALL_ONES_MASKS = new Set(["255.255.255.255", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"]);

function withPrefix(address: string): string {
  if (address.includes("/")) return address;
  return address.includes(":") ? `${address}/128` : `${address}/32`;
}

/** Marks: the restore input may pad them ("0x00004000"), iptables-save does not. */
function unpadHex(value: string): string {
  if (!value.includes("0x")) return value;
  return value.replace(/\b0x0*([0-9a-f]+)\b/gi, (_, hex: string) => `0x${hex.toLowerCase()}`);
}

/**
 * One option with its values as the key holds it ("!" in front when negated: iptables-save's
 * "! -s" and "-m x ! --y" alike); undefined when it only says what iptables assumes anyway.
 */
function normalGroup(negated: boolean, opt: string, raw: string): string | undefined {
  const neg = negated ? "! " : "";
  const value = unpadHex(raw);
  switch (opt) {
    case "-m":
      return PORT_MATCHES.has(value) ? undefined : `${neg}-m ${value}`;
    case "-s":
    case "-d":
      return `${neg}${opt} ${withPrefix(value)}`;
    case "--reject-with":
      return DEFAULT_REJECTS.has(value) ? undefined : `${neg}${opt} ${value}`;
    case "--mask":
      return ALL_ONES_MASKS.has(value) ? undefined : `${neg}${opt} ${value}`;
    case "--rsource":
      return undefined;
    case "--or-mark":
      return `--set-xmark ${value}/${value}`;
    case "--xor-mark":
      return `--set-xmark ${value}/0x0`;
    case "--probability": {
      const p = Number(value);
      return `${opt} ${Number.isFinite(p) ? p.toFixed(6) : value}`;
    }
    default:
      return value === "" ? `${neg}${opt}` : `${neg}${opt} ${value}`;
  }
}

function isOption(t: string): boolean {
  if (t.length < 2 || t.charCodeAt(0) !== 45) return false;
  const c = t.charCodeAt(1);
  return c < 48 || c > 57;
}

/** Each normalized option of a rule's arguments (everything after "-A CHAIN"), in their order. */
function eachOption(args: string, take: (group: string) => void): void {
  // Most rules hold no quote or escape: split at spaces.
  const tokens = args.includes('"') || args.includes("\\") ? splitSavedRule(args) : args.split(" ");
  let opt: string | undefined;
  let value = "";
  let negated = false;
  let negateNext = false;
  const flush = () => {
    if (opt === undefined) {
      if (value !== "") take(value);
      return;
    }
    const g = normalGroup(negated, opt, value);
    if (g !== undefined) take(g);
  };
  for (const t of tokens) {
    if (t === "") continue;
    if (t === "!") {
      negateNext = true;
      continue;
    }
    if (isOption(t)) {
      flush();
      opt = LONG_NAMES[t] ?? t;
      value = "";
      negated = negateNext;
      negateNext = false;
    } else value = value === "" ? t : `${value} ${t}`;
  }
  flush();
}

/**
 * The key of a rule's arguments: its normalized options, sorted. Two rules with the same key
 * match the same packets and do the same.
 */
export function ruleKey(args: string): string {
  const out: string[] = [];
  eachOption(args, (g) => out.push(g));
  return out.sort().join(" ; ");
}

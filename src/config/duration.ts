// Go time.Duration text, because kube-proxy flags and config files use it ("30s", "1m30s",
// "500ms", "2h45m"). Parsing follows time.ParseDuration's grammar and limits; formatting follows
// Duration.String, so values written back ("15m0s", "24h0m0s") read the way upstream prints them.

const NS_PER: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  "\u00b5s": 1_000n, // micro sign
  "\u03bcs": 1_000n, // Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

const MAX_NS = (1n << 63n) - 1n;

export type DurationParse = { ok: true; ns: bigint; ms: number } | { ok: false; error: string };

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= "0" && c <= "9";
}

/** Parses a Go duration string. "0" is the only value accepted without a unit. */
export function parseGoDuration(text: string): DurationParse {
  const fail = (why: string): DurationParse => ({ ok: false, error: `invalid duration: ${why}` });
  let s = text;
  let negative = false;
  if (s.startsWith("-") || s.startsWith("+")) {
    negative = s.startsWith("-");
    s = s.slice(1);
  }
  if (s === "0") return { ok: true, ns: 0n, ms: 0 };
  if (s === "") return fail("empty");
  let total = 0n;
  while (s !== "") {
    if (!(s[0] === "." || isDigit(s[0]))) return fail("expected a number");
    let i = 0;
    while (isDigit(s[i])) i++;
    const whole = s.slice(0, i);
    let frac = "";
    if (s[i] === ".") {
      let j = i + 1;
      while (isDigit(s[j])) j++;
      frac = s.slice(i + 1, j);
      i = j;
    }
    if (whole === "" && frac === "") return fail("expected digits around the decimal point");
    let j = i;
    while (j < s.length && s[j] !== "." && !isDigit(s[j])) j++;
    const unit = s.slice(i, j);
    if (unit === "") return fail("missing unit (use ns, us, ms, s, m or h, e.g. 30s)");
    const scale = NS_PER[unit];
    if (scale === undefined) return fail(`unknown unit ${JSON.stringify(unit)}`);
    let part = BigInt(whole === "" ? "0" : whole) * scale;
    if (frac !== "") part += (BigInt(frac) * scale) / 10n ** BigInt(frac.length);
    total += part;
    if (total > MAX_NS + (negative ? 1n : 0n)) return fail("out of range");
    s = s.slice(j);
  }
  const ns = negative ? -total : total;
  return { ok: true, ns, ms: nsToMillis(ns) };
}

export function nsToMillis(ns: bigint): number {
  return Number(ns) / 1e6;
}

export function millisToNs(ms: number): bigint {
  return BigInt(Math.round(ms * 1e6));
}

/** `value` scaled down by 10^digits, with trailing zeros (and a bare point) dropped. */
function decimal(value: bigint, digits: number): string {
  const base = 10n ** BigInt(digits);
  const fraction = (value % base).toString().padStart(digits, "0").replace(/0+$/, "");
  return fraction === "" ? `${value / base}` : `${value / base}.${fraction}`;
}

/** Formats nanoseconds the way Go's Duration.String does. */
export function formatGoDurationNs(ns: bigint): string {
  if (ns === 0n) return "0s";
  const sign = ns < 0n ? "-" : "";
  const u = ns < 0n ? -ns : ns;
  if (u < 1_000n) return `${sign}${u}ns`;
  if (u < 1_000_000n) return `${sign}${decimal(u, 3)}\u00b5s`;
  if (u < 1_000_000_000n) return `${sign}${decimal(u, 6)}ms`;
  const totalSeconds = u / 1_000_000_000n;
  const seconds = decimal((totalSeconds % 60n) * 1_000_000_000n + (u % 1_000_000_000n), 9);
  const totalMinutes = totalSeconds / 60n;
  if (totalMinutes === 0n) return `${sign}${seconds}s`;
  const hours = totalMinutes / 60n;
  const minutes = totalMinutes % 60n;
  return hours === 0n ? `${sign}${minutes}m${seconds}s` : `${sign}${hours}h${minutes}m${seconds}s`;
}

/** Formats milliseconds as a Go duration string ("30s", "15m0s", "1.5s"). */
export function formatGoDuration(ms: number): string {
  return formatGoDurationNs(millisToNs(ms));
}

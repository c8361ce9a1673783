// Go's time.Time.String() text. Upstream's /healthz and /livez print times with %q, so load
// balancers and scripts that parse those bodies see "2024-05-01 10:00:00.5 +0000 UTC m=+12.5".

const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** What Go prints for the zero time.Time (no update has happened yet). */
export const GO_ZERO_TIME = "0001-01-01 00:00:00 +0000 UTC";

/**
 * Formats epoch milliseconds (fractions keep sub-millisecond precision) as Go does, in UTC.
 * `monotonicOriginMs` adds Go's " m=+S" suffix: Go appends it to every time read from the
 * real clock, counting seconds since the process started; fake clocks carry none.
 */
export function formatGoTime(epochMs: number | undefined, monotonicOriginMs?: number): string {
  if (epochMs === undefined) return GO_ZERO_TIME;
  const wholeMs = Math.floor(epochMs);
  const subMsNs = Math.min(999_999, Math.round((epochMs - wholeMs) * 1e6));
  const d = new Date(wholeMs);
  const nanos = d.getUTCMilliseconds() * 1e6 + subMsNs;
  // Go's ".999999999" layout: trailing zeros dropped, no point at all for whole seconds.
  const fraction = nanos === 0 ? "" : `.${pad(nanos, 9).replace(/0+$/, "")}`;
  const text =
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)} ` +
    `${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}${fraction} +0000 UTC`;
  return monotonicOriginMs === undefined ? text : `${text} ${monotonicSuffix(epochMs - monotonicOriginMs)}`;
}

/** " m=+1232.442473383": whole seconds, then always nine fractional digits. */
function monotonicSuffix(sinceOriginMs: number): string {
  const sign = sinceOriginMs < 0 ? "-" : "+";
  const abs = Math.abs(sinceOriginMs);
  let seconds = Math.floor(abs / 1000);
  let ns = Math.round((abs - seconds * 1000) * 1e6);
  if (ns >= 1e9) {
    seconds += 1;
    ns -= 1e9;
  }
  return `m=${sign}${seconds}.${pad(ns, 9)}`;
}

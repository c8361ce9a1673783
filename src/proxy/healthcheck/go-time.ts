// Go's time.RFC3339Nano text, as encoding/json writes a time.Time: upstream's /healthz and /livez
// bodies (1.33+) carry their times so, and load balancers and scripts parse them.

const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** What Go writes for the zero time.Time (no update has happened yet). */
export const GO_ZERO_TIME = "0001-01-01T00:00:00Z";

/**
 * Epoch milliseconds (fractions keep sub-millisecond precision) in UTC as
 * "2026-07-23T10:00:05.123456789Z", trailing fraction zeros dropped; the zero time for undefined.
 */
export function formatRFC3339Nano(epochMs: number | undefined): string {
  if (epochMs === undefined) return GO_ZERO_TIME;
  const wholeMs = Math.floor(epochMs);
  const subMsNs = Math.min(999_999, Math.round((epochMs - wholeMs) * 1e6));
  const d = new Date(wholeMs);
  const nanos = d.getUTCMilliseconds() * 1e6 + subMsNs;
  const fraction = nanos === 0 ? "" : `.${pad(nanos, 9).replace(/0+$/, "")}`;
  return (
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}T` +
    `${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}${fraction}Z`
  );
}

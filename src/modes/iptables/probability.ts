// The `--probability` values of the load-balancing rules: 1/n printed as Go's "%0.10f" does.
// Go rounds the exact binary value of the double half-to-even; JavaScript's toFixed rounds exact
// ties upwards (e.g. 1/2048), so the digits are computed here with integer arithmetic instead.

const SCALE = 10n ** 10n;

/** The exact value of a finite positive double as mantissa * 2^exponent. */
function decompose(x: number): { mantissa: bigint; exponent: number } {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const hi = view.getUint32(0);
  const lo = view.getUint32(4);
  const biased = (hi >>> 20) & 0x7ff;
  const fraction = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  if (biased === 0) return { mantissa: fraction, exponent: -1074 };
  return { mantissa: fraction | (1n << 52n), exponent: biased - 1075 };
}

/** x (0 < x <= 1) with exactly 10 decimals, rounded half-to-even on its exact binary value. */
export function formatFixed10(x: number): string {
  const { mantissa, exponent } = decompose(x);
  let scaled: bigint;
  if (exponent >= 0) {
    scaled = (mantissa << BigInt(exponent)) * SCALE;
  } else {
    const shift = BigInt(-exponent);
    const numerator = mantissa * SCALE;
    scaled = numerator >> shift;
    const remainder = numerator - (scaled << shift);
    const half = 1n << (shift - 1n);
    if (remainder > half || (remainder === half && (scaled & 1n) === 1n)) scaled += 1n;
  }
  const digits = scaled.toString().padStart(11, "0");
  return `${digits.slice(0, -10)}.${digits.slice(-10)}`;
}

/** Upstream's computeProbability: the chance that rule k of n (counting down) matches. */
export function computeProbability(n: number): string {
  return formatFixed10(1 / n);
}

/** Probabilities are only ever 1/n; they are formatted once and reused across syncs. */
export class ProbabilityCache {
  private readonly values: string[] = [""];

  get(n: number): string {
    for (let i = this.values.length; i <= n; i++) this.values.push(computeProbability(i));
    return this.values[n]!;
  }
}

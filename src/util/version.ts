// Dotted versions as kernels and host tools print them ("6.18.44-fc-v595", "v7.17"): only
// the leading major.minor.patch matters for feature gates; distro suffixes are ignored.

export interface Version {
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
}

export class VersionParseError extends Error {
  override readonly name = "VersionParseError";
  constructor(readonly input: string) {
    super(`cannot parse version from ${JSON.stringify(input)}`);
  }
}

const LEADING_VERSION = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/;

export function parseVersion(s: string): Version {
  const trimmed = s.trim();
  const m = LEADING_VERSION.exec(trimmed);
  // Major alone is accepted ("6"), but the number must not run straight into letters ("6foo").
  if (!m || /^[A-Za-z]/.test(trimmed.slice(m[0].length))) throw new VersionParseError(s);
  return { major: Number(m[1]), minor: Number(m[2] ?? 0), patch: Number(m[3] ?? 0) };
}

function toVersion(v: Version | string): Version {
  return typeof v === "string" ? parseVersion(v) : v;
}

/** Negative when a < b, zero when equal, positive when a > b. */
export function compareVersions(a: Version | string, b: Version | string): number {
  const x = toVersion(a);
  const y = toVersion(b);
  return Math.sign(x.major - y.major || x.minor - y.minor || x.patch - y.patch);
}

export function versionAtLeast(v: Version | string, min: Version | string): boolean {
  return compareVersions(v, min) >= 0;
}

export function formatVersion(v: Version): string {
  return `${v.major}.${v.minor}.${v.patch}`;
}

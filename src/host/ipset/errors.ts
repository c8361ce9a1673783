// Typed failures of the ipset tool: a failed run (with the script line ipset blamed) and
// `ipset save` output that cannot be read.

import { HostToolError } from "../errors.ts";

export class IpsetError extends HostToolError {
  override readonly name = "IpsetError";
  /** 1-based script line ipset blamed ("Error in line 3: ..."), when it named one. */
  readonly line: number | undefined;
  /** That line's text. */
  readonly text: string | undefined;
  /** ipset's message without the "ipset vX.Y:" banner and line prefix. */
  readonly reason: string;

  constructor(
    readonly command: string,
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
    script?: string,
  ) {
    const { line, reason } = parseIpsetError(stderr);
    const text = line !== undefined && script !== undefined ? script.split("\n")[line - 1] : undefined;
    const where = line === undefined ? "" : ` at line ${line}${text !== undefined ? ` (${text})` : ""}`;
    super(`${command} ${args.join(" ")}${where}: ${reason || `exit code ${exitCode}`}`);
    this.line = line;
    this.text = text;
    this.reason = reason;
  }

  /** The set (or element) named does not exist (upstream's IsNotFoundError). */
  isNotFound(): boolean {
    return /does not exist|element is missing|it's not added/.test(this.reason);
  }

  /** The set (or element) to create or add exists already. */
  isExists(): boolean {
    return /already exists|it's already added/.test(this.reason);
  }
}

/** Splits ipset's stderr into the blamed line (if any) and the message. */
export function parseIpsetError(stderr: string): { line: number | undefined; reason: string } {
  const lines = stderr
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("Try `ipset help'"));
  let line: number | undefined;
  const reasons = lines.map((l) => {
    let text = l.replace(/^ipset v[\d.]+: /, "");
    const m = /^Error in line (\d+): /.exec(text);
    if (m) {
      line ??= Number(m[1]);
      text = text.slice(m[0].length);
    }
    return text;
  });
  return { line, reason: reasons.join("; ") };
}

export class IpsetParseError extends HostToolError {
  override readonly name = "IpsetParseError";
  constructor(
    readonly line: number,
    readonly text: string,
    why: string,
  ) {
    super(`ipset save output line ${line}: ${why}: ${JSON.stringify(text)}`);
  }

  /** Output that cannot be read names no missing object. */
  isNotFound(): boolean {
    return false;
  }

  isExists(): boolean {
    return false;
  }
}

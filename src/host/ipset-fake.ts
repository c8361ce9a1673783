// A stateful stand-in for the ipset binary, answering through a FakeExec so the real
// IpsetClient is what tests exercise. Each subcommand is one entry in a table; set and
// entry state will live on this class as the client grows.

import { FakeExec, ok } from "../exec/fake.ts";
import type { ExecRequest, ExecResult } from "../exec/types.ts";

export interface FakeIpsetOptions {
  /** Version the fake reports, without the leading "v". */
  version?: string;
}

type Subcommand = (fake: FakeIpset, args: readonly string[]) => ExecResult;

const SUBCOMMANDS: Readonly<Record<string, Subcommand>> = {
  version: (fake) => ok(`ipset v${fake.version}, protocol version: ${fake.protocolVersion}\n`),
};

// Spellings ipset accepts for the same subcommand.
const ALIASES: Readonly<Record<string, string>> = {
  "--version": "version",
  "-v": "version",
  "-V": "version",
};

export class FakeIpset {
  version: string;

  constructor(opts: FakeIpsetOptions = {}) {
    this.version = opts.version ?? "7.17";
  }

  /** ipset reports its major version as the netlink protocol version. */
  get protocolVersion(): string {
    return this.version.split(".")[0] ?? "";
  }

  /** Answers one ipset invocation the way the binary would. */
  handle(req: ExecRequest): ExecResult {
    const [first = "", ...rest] = req.args;
    const name = ALIASES[first] ?? first;
    const sub = SUBCOMMANDS[name];
    if (!sub) {
      return { code: 1, stdout: "", stderr: `ipset v${this.version}: Unknown argument: \`${first}'\n` };
    }
    return sub(this, rest);
  }

  /** Registers this fake as the "ipset" program of `exec` (a new FakeExec by default). */
  install(exec: FakeExec = new FakeExec()): FakeExec {
    return exec.on("ipset", (req) => this.handle(req));
  }
}

export function createFakeIpset(opts: FakeIpsetOptions = {}): FakeIpset {
  return new FakeIpset(opts);
}

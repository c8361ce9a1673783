// --dry-run: read the host for real, change nothing. Read-only commands go to the real Exec;
// every other command is recorded (and reported to the operator) instead of run. Anything the
// classifier does not recognise counts as mutating, so a new call site can never slip through.

import type { Exec, ExecInput, ExecRequest, ExecResult } from "./types.ts";

export interface RecordedCommand {
  /** argv[0] is the program as the caller named it. */
  argv: string[];
  /**
   * The input's text. An input given in pieces is kept in pieces (see stdinPieces), and this
   * text is made from them each time it is read: for tests and small consumers, not big inputs.
   */
  readonly stdin?: string;
}

/** The pieces an input given in pieces was recorded as, by the command that recorded them. */
const recordedPieces = new WeakMap<object, readonly string[]>();

/**
 * A command's stdin as pieces that concatenate to its text, without joining them: the pieces
 * recorded, or the one text; undefined without stdin.
 */
export function stdinPieces(command: { readonly stdin?: string }): readonly string[] | undefined {
  const pieces = recordedPieces.get(command);
  if (pieces) return pieces;
  return command.stdin === undefined ? undefined : [command.stdin];
}

/** Below this, pieces are joined into runs of about this size (a tiny string costs more than its text). */
const RUN_CHARS = 64 * 1024;

/** An input's pieces, kept: big ones as they are, small ones joined into runs (no copy of the whole). */
function keptPieces(input: Iterable<string>): string[] {
  const out: string[] = [];
  let run: string[] = [];
  let runChars = 0;
  const endRun = () => {
    if (run.length > 0) out.push(run.length === 1 ? run[0]! : run.join(""));
    run = [];
    runChars = 0;
  };
  for (const piece of input) {
    if (piece.length >= RUN_CHARS) {
      endRun();
      out.push(piece);
      continue;
    }
    if (piece.length === 0) continue;
    run.push(piece);
    runChars += piece.length;
    if (runChars >= RUN_CHARS) endRun();
  }
  endRun();
  return out;
}

/** Records `input` on `command`: a text as it is; pieces kept (see stdinPieces), read as text on demand. */
function recordInput(command: RecordedCommand, input: ExecInput): void {
  if (typeof input === "string") {
    (command as { stdin?: string }).stdin = input;
    return;
  }
  const pieces = keptPieces(input);
  recordedPieces.set(command, pieces);
  Object.defineProperty(command, "stdin", { enumerable: true, get: () => pieces.join("") });
}

type Args = readonly string[];

function baseName(cmd: string): string {
  const slash = cmd.lastIndexOf("/");
  return slash < 0 ? cmd : cmd.slice(slash + 1);
}

// Options end at "--"; what follows is operands (module names, set names).
function options(args: Args): Args {
  const end = args.indexOf("--");
  return end < 0 ? args : args.slice(0, end);
}

// Short options may be bundled ("-nL", "-Ln"); split them so each letter is seen.
function shortFlags(args: Args): Set<string> {
  const out = new Set<string>();
  for (const a of options(args)) {
    if (/^-[A-Za-z]+$/.test(a)) for (const ch of a.slice(1)) out.add(`-${ch}`);
  }
  return out;
}

function hasAny(args: Args, flags: Set<string>, names: readonly string[]): boolean {
  const opts = options(args);
  const long = (n: string) => opts.some((a) => a === n || a.startsWith(`${n}=`));
  return names.some((n) => (n.startsWith("--") ? long(n) : flags.has(n)));
}

// Read-only iff a listing/checking command is present and no mutating command rides along
// (e.g. "iptables -L -Z" lists and also zeroes the counters).
function commandIsReadOnly(args: Args, readOnly: readonly string[], mutating: readonly string[]): boolean {
  const flags = shortFlags(args);
  return hasAny(args, flags, readOnly) && !hasAny(args, flags, mutating);
}

const IPTABLES_READ = ["-C", "--check", "-L", "--list", "-S", "--list-rules", "-V", "--version"];
const IPTABLES_WRITE = [
  ...["-A", "--append", "-D", "--delete", "-I", "--insert", "-R", "--replace", "-F", "--flush"],
  ...["-Z", "--zero", "-N", "--new-chain", "-X", "--delete-chain", "-P", "--policy"],
  ...["-E", "--rename-chain"],
];

const IPVSADM_READ = ["-S", "--save", "-L", "-l", "--list", "-v", "--version"];
const IPVSADM_WRITE = [
  ...["-A", "--add-service", "-E", "--edit-service", "-D", "--delete-service", "-C", "--clear"],
  ...["-R", "--restore", "-a", "--add-server", "-e", "--edit-server", "-d", "--delete-server"],
  ...["-Z", "--zero", "--set", "--start-daemon", "--stop-daemon"],
];

const CONNTRACK_READ = ["-L", "--dump", "-C", "--count", "-S", "--stats", "-V", "--version"];
// -z zeroes counters while listing; -E streams events forever and is never a one-shot read.
const CONNTRACK_WRITE = [
  ...["-D", "--delete", "-F", "--flush", "-U", "--update", "-I", "--create", "-R", "--load-file"],
  ...["-z", "--zero", "-E", "--event"],
];

function ipsetIsReadOnly(args: Args): boolean {
  // Output options carry no meaning for safety; -o/-output take a value.
  const plain = new Set([
    ...["-n", "-name", "-t", "-terse", "-s", "-sorted", "-q", "-quiet", "-r", "-resolve"],
    ...["-exist", "-!"],
  ]);
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "-f" || a === "-file") return false; // writes the listing to a file
    if (a === "-o" || a === "-output") i++;
    else if (!plain.has(a)) rest.push(a);
  }
  const command = rest[0];
  if (command === undefined) return false;
  if (["--version", "-v", "-V", "version"].includes(command)) return rest.length === 1;
  return ["list", "-L", "save", "-S"].includes(command);
}

const IP_OBJECTS = new Set(["addr", "address", "a", "link", "l", "route", "r", "rule"]);
const IP_FLAG_OPTIONS = new Set([
  ...["-o", "-oneline", "-4", "-6", "-j", "-json", "-br", "-brief", "-d", "-details"],
  ...["-s", "-stats", "-p", "-pretty", "-N", "-numeric", "-c", "-color"],
]);

function ipIsReadOnly(args: Args): boolean {
  let i = 0;
  for (; i < args.length && args[i]!.startsWith("-"); i++) {
    const a = args[i]!;
    if (a === "-f" || a === "-family") i++;
    else if (!IP_FLAG_OPTIONS.has(a)) return false; // -batch, -force, -netns, ...
  }
  const object = args[i];
  if (object === undefined || !IP_OBJECTS.has(object)) return false;
  const verb = args[i + 1];
  if (verb === undefined) return true;
  if (["show", "list", "ls"].includes(verb)) return true;
  return verb === "get" && (object === "route" || object === "r");
}

function nfacctIsReadOnly(args: Args): boolean {
  // "nfacct list reset" / "nfacct get NAME reset" zero the counters they print.
  return (args[0] === "list" || args[0] === "get") && !args.includes("reset");
}

// Only listings, the version and --check (which parses and validates, committing nothing) are
// safe; "nft -f", "add", "delete", "flush" change rules.
function nftIsReadOnly(args: Args): boolean {
  if (args.includes("-c") || args.includes("--check")) return true;
  const plain = new Set([
    "-n",
    "--numeric",
    "-a",
    "--handle",
    "-j",
    "--json",
    "-s",
    "--stateless",
    "-t",
    "--terse",
  ]);
  const rest = args.filter((a) => !plain.has(a));
  if (rest.length === 1 && ["-v", "--version", "-V"].includes(rest[0]!)) return true;
  return rest[0] === "list" && rest.length > 1;
}

function modprobeIsReadOnly(args: Args): boolean {
  return hasAny(args, shortFlags(args), ["-n", "--dry-run", "--show", "-D", "--show-depends"]);
}

// The save tools only print, unless told to write their dump into a file.
function saveIsReadOnly(args: Args): boolean {
  return !hasAny(args, shortFlags(args), ["-f", "--file"]);
}

const IPTABLES_FAMILY = /^ip6?tables(-legacy|-nft)?$/;
const IPTABLES_SAVE = /^ip6?tables(-legacy|-nft)?-save$/;
const IPTABLES_RESTORE = /^ip6?tables(-legacy|-nft)?-restore$/;

// The restore tools change tables unless asked for nothing but their version.
function restoreIsReadOnly(args: Args): boolean {
  return args.length === 1 && (args[0] === "--version" || args[0] === "-V");
}

/** True when running the command cannot change host state. Unknown commands are mutating. */
export function isReadOnlyCommand(req: Pick<ExecRequest, "cmd" | "args">): boolean {
  const cmd = baseName(req.cmd);
  const args = req.args;
  if (IPTABLES_SAVE.test(cmd)) return saveIsReadOnly(args);
  if (IPTABLES_RESTORE.test(cmd)) return restoreIsReadOnly(args);
  if (IPTABLES_FAMILY.test(cmd)) return commandIsReadOnly(args, IPTABLES_READ, IPTABLES_WRITE);
  switch (cmd) {
    case "ipset":
      return ipsetIsReadOnly(args);
    case "ipvsadm":
      return commandIsReadOnly(args, IPVSADM_READ, IPVSADM_WRITE);
    case "ip":
      return ipIsReadOnly(args);
    case "conntrack":
      return commandIsReadOnly(args, CONNTRACK_READ, CONNTRACK_WRITE);
    case "nfacct":
      return nfacctIsReadOnly(args);
    case "modprobe":
      return modprobeIsReadOnly(args);
    case "nft":
      return nftIsReadOnly(args);
    default:
      return false;
  }
}

const NOT_RUN: ExecResult = { code: 0, stdout: "", stderr: "" };

export class DryRunRecorder implements Exec {
  /** Mutating commands in the order they were requested. */
  readonly commands: RecordedCommand[] = [];

  /**
   * `inner` answers read-only commands (usually the real Exec). `applyTo`, in a replay, is the
   * simulated host: each recorded command also runs there, and its answer is returned, so the
   * next reads see it.
   */
  constructor(
    private readonly inner: Exec,
    private readonly applyTo?: Exec,
  ) {}

  async run(req: ExecRequest): Promise<ExecResult> {
    if (isReadOnlyCommand(req)) return this.inner.run(req);
    const recorded: RecordedCommand = { argv: [req.cmd, ...req.args] };
    if (req.stdin !== undefined) recordInput(recorded, req.stdin);
    this.commands.push(recorded);
    if (!this.applyTo) return { ...NOT_RUN };
    // The input was consumed into the record when it came in pieces: give the text again.
    return this.applyTo.run(req.stdin === undefined ? req : { ...req, stdin: stdinPieces(recorded) ?? [] });
  }
}

import { describe, expect, test } from "bun:test";
import { createRealExec, STDIN_PIECE } from "../../src/exec/runner.ts";

const exec = createRealExec();

describe("createRealExec", () => {
  test("captures stdout and stderr separately", async () => {
    const res = await exec.run({ cmd: "/bin/sh", args: ["-c", "echo out; echo err >&2"] });
    expect(res).toEqual({ code: 0, stdout: "out\n", stderr: "err\n" });
  });

  test("passes arguments verbatim without a shell", async () => {
    const res = await exec.run({
      cmd: "/bin/sh",
      args: ["-c", 'printf "%s|" "$@"', "sh", "a b", "$HOME", "*"],
    });
    expect(res.stdout).toBe("a b|$HOME|*|");
  });

  test("pipes stdin: cat round-trips a 5 MB string", async () => {
    const line = "-A KUBE-SERVICES -d 198.51.100.1/32 -p tcp -j KUBE-SVC-NPX46M4PTMTKRN6Y é\n";
    const input = line.repeat(Math.ceil((5 * 1024 * 1024) / line.length));
    const res = await exec.run({ cmd: "cat", args: [], stdin: input });
    expect(res.code).toBe(0);
    expect(res.stdout.length).toBe(input.length);
    expect(res.stdout === input).toBe(true);
  });

  test("stdin goes in pieces: a surrogate pair on a piece boundary arrives whole, to a slow reader", async () => {
    const line = "-A KUBE-SEP-XXXXXXXXXXXXXXXX -s 198.51.100.7 -j KUBE-MARK-MASQ\n";
    const filler = line.repeat(Math.ceil((3 * STDIN_PIECE) / line.length));
    // The pair's high half is the last character of the first piece.
    const input = `${filler.slice(0, STDIN_PIECE - 1)}\u{1F600}é${filler.slice(STDIN_PIECE - 1)}`;
    const res = await exec.run({ cmd: "/bin/sh", args: ["-c", "sleep 0.2; cat"], stdin: input });
    expect(res.code).toBe(0);
    expect(res.stdout === input).toBe(true);
  });

  test("an iterable stdin is read one piece at a time, each only once the child took the last", async () => {
    const piece = "x".repeat(STDIN_PIECE);
    let made = 0;
    function* pieces() {
      for (let i = 0; i < 8; i++) {
        made++;
        yield piece;
      }
    }
    const run = exec.run({ cmd: "/bin/sh", args: ["-c", "sleep 0.5; wc -c"], stdin: pieces() });
    // The child sleeps before it reads: only the pieces a pipe holds can have been made.
    await new Promise((r) => setTimeout(r, 300));
    const madeBeforeReading = made;
    const res = await run;
    expect(res.code).toBe(0);
    expect(Number(res.stdout.trim())).toBe(8 * STDIN_PIECE);
    expect(madeBeforeReading).toBeLessThan(8);
  });

  test("an input that fails to make its next piece kills the child before it sees the end of it", async () => {
    function* pieces() {
      yield "first line\n";
      throw new Error("rule computation broke");
    }
    // A child that got EOF would print what it read and exit 0.
    const res = await exec.run({ cmd: "/bin/sh", args: ["-c", "cat; echo got-eof"], stdin: pieces() });
    expect(res.code).not.toBe(0);
    expect(res.stdout).not.toContain("got-eof");
    expect(res.stderr).toContain("/bin/sh: its input could not be made (rule computation broke)");
  });

  test("captures a large stdout (30 MB) intact", async () => {
    const size = 30 * 1024 * 1024;
    const res = await exec.run({ cmd: "/bin/sh", args: ["-c", `head -c ${size} /dev/zero | tr '\\0' a`] });
    expect(res.code).toBe(0);
    expect(res.stdout.length).toBe(size);
    expect(res.stdout.endsWith("aaa")).toBe(true);
  });

  test("keeps only the stdout lines with the prefix, lines split across chunks included", async () => {
    // 200,000 lines (about 2 MB, many pipe chunks, so chain lines fall across chunk ends too):
    // every 100th is a chain line; the last one has no newline.
    const awk =
      'BEGIN { for (i = 0; i < 200000; i++) if (i % 100 == 0) printf ":C%d - [0:0]\\n", i; else printf "-A X %d\\n", i; printf ":END" }';
    const res = await exec.run({ cmd: "awk", args: [awk], keepStdoutLinesStartingWith: ":" });
    expect(res.code).toBe(0);
    const lines = res.stdout.split("\n");
    expect(lines.length).toBe(2001);
    expect(lines.every((l, k) => l === (k < 2000 ? `:C${k * 100} - [0:0]` : ":END"))).toBe(true);
  });

  test("closes stdin when none is given, so a reader sees EOF at once", async () => {
    const res = await exec.run({ cmd: "cat", args: [], timeoutMs: 5000 });
    expect(res).toEqual({ code: 0, stdout: "", stderr: "" });
  });

  test("a child that exits without reading stdin does not crash the runner (EPIPE)", async () => {
    const res = await exec.run({ cmd: "true", args: [], stdin: "x".repeat(4 * 1024 * 1024) });
    expect(res.code).toBe(0);
  });

  test("returns a non-zero exit code instead of throwing", async () => {
    expect((await exec.run({ cmd: "false", args: [] })).code).toBe(1);
    const res = await exec.run({ cmd: "/bin/sh", args: ["-c", "echo bad >&2; exit 3"] });
    expect(res).toEqual({ code: 3, stdout: "", stderr: "bad\n" });
  });

  test("reports a child killed by a signal as 128+signo", async () => {
    const res = await exec.run({ cmd: "/bin/sh", args: ["-c", "kill -TERM $$"] });
    expect(res.code).toBe(128 + 15);
  });

  test("kills a child that outlives timeoutMs and reports 124", async () => {
    const start = Date.now();
    const res = await exec.run({ cmd: "sleep", args: ["30"], timeoutMs: 200 });
    // Judged against the other outcome (the child's own 30 s), not against the machine's speed.
    expect(Date.now() - start).toBeLessThan(15_000);
    expect(res.code).toBe(124);
    expect(res.timedOut).toBe(true);
  });

  test("a timeout does not wait for a grandchild that holds the pipes", async () => {
    const start = Date.now();
    const res = await exec.run({ cmd: "/bin/sh", args: ["-c", "sleep 30 & sleep 30"], timeoutMs: 200 });
    expect(Date.now() - start).toBeLessThan(15_000);
    expect(res.code).toBe(124);
  });

  test("a missing binary resolves to 127 with a shell-like message", async () => {
    const res = await exec.run({ cmd: "kube-proxy-ts-no-such-tool", args: ["--version"] });
    expect(res).toEqual({ code: 127, stdout: "", stderr: "kube-proxy-ts-no-such-tool: command not found" });
  });

  test("sets LC_ALL=C and adds extra env for the child", async () => {
    const withEnv = createRealExec({ env: { KPT_TEST: "yes", LC_ALL: "de_DE.UTF-8" } });
    const res = await withEnv.run({ cmd: "/bin/sh", args: ["-c", 'echo "$LC_ALL $KPT_TEST"'] });
    expect(res.stdout).toBe("C yes\n");
  });
});

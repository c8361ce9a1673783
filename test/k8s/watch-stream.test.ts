import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { readWatchStream, type WatchEvent } from "../../src/k8s/watch-stream.ts";

/** A byte stream fed by the test, chunk by chunk. */
function controlled() {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const state = { cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      ctl = c;
    },
    cancel() {
      state.cancelled = true;
    },
  });
  const enc = new TextEncoder();
  return {
    stream,
    state,
    push: (s: string) => ctl.enqueue(enc.encode(s)),
    end: () => ctl.close(),
    fail: (e: Error) => ctl.error(e),
  };
}

describe("readWatchStream", () => {
  test("splits events across chunk boundaries and resolves when the stream ends", async () => {
    const s = controlled();
    const events: WatchEvent[] = [];
    const done = readWatchStream(s.stream, (e) => events.push(e) > 0, { idleMs: 5000 });
    s.push('{"type":"ADDED","object":{"a":1}}\n{"type":"MOD');
    s.push('IFIED","object":{"a":2}}\n\n');
    s.push('{"type":"DELETED","object":{"a":3}}');
    s.end();
    await done;
    expect(events.map((e) => e.type)).toEqual(["ADDED", "MODIFIED", "DELETED"]);
  });

  test("stops reading when the callback returns false", async () => {
    const s = controlled();
    const seen: string[] = [];
    const done = readWatchStream(
      s.stream,
      (e) => {
        seen.push(e.type);
        return e.type !== "ERROR";
      },
      { idleMs: 5000 },
    );
    s.push(
      '{"type":"ADDED","object":{}}\n{"type":"ERROR","object":{"code":410}}\n{"type":"ADDED","object":{}}\n',
    );
    await done;
    expect(seen).toEqual(["ADDED", "ERROR"]);
    expect(s.state.cancelled).toBe(true);
  });

  test("rejects on undecodable JSON and on a broken stream", async () => {
    const bad = controlled();
    const p1 = readWatchStream(bad.stream, () => true, { idleMs: 5000 });
    bad.push("<html>proxy error</html>\n");
    await expect(p1).rejects.toThrow("undecodable watch event");
    expect(bad.state.cancelled).toBe(true);

    const broken = controlled();
    const p2 = readWatchStream(broken.stream, () => true, { idleMs: 5000 });
    broken.fail(new Error("socket hang up"));
    await expect(p2).rejects.toThrow("socket hang up");
  });

  test("a silent stream fails after idleMs; activity keeps it alive", async () => {
    const s = controlled();
    const started = Date.now();
    const p = readWatchStream(s.stream, () => true, { idleMs: 150 });
    const keepAlive = setInterval(() => s.push('{"type":"BOOKMARK","object":{}}\n'), 50);
    await new Promise((r) => setTimeout(r, 300));
    clearInterval(keepAlive);
    await expect(p).rejects.toThrow("idle for 150 ms");
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
  });

  test("aborting the signal ends reading", async () => {
    const s = controlled();
    const ctl = new AbortController();
    const p = readWatchStream(s.stream, () => true, { idleMs: 5000, signal: ctl.signal });
    ctl.abort();
    await p;
    expect(ctl.signal.aborted).toBe(true);
  });

  test("events come out whole and in order however the bytes are cut (multibyte text and megabyte lines too)", async () => {
    const event = fc.record({
      type: fc.constantFrom("ADDED", "MODIFIED", "DELETED", "BOOKMARK"),
      object: fc.record({ name: fc.string({ unit: "grapheme" }), n: fc.nat() }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(event, { minLength: 1, maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        async (events, cuts) => {
          const bytes = new TextEncoder().encode(events.map((e) => `${JSON.stringify(e)}\n`).join(""));
          const seen: WatchEvent[] = [];
          const stream = new ReadableStream<Uint8Array>({
            start(c) {
              let at = 0;
              for (const cut of [...new Set(cuts.map((n) => n % bytes.length))].sort((a, b) => a - b)) {
                if (cut > at) c.enqueue(bytes.slice(at, cut));
                at = Math.max(at, cut);
              }
              c.enqueue(bytes.slice(at));
              c.close();
            },
          });
          await readWatchStream(stream, (e) => seen.push(e) > 0, { idleMs: 60_000 });
          expect(seen).toEqual(events);
        },
      ),
      { numRuns: 200 },
    );
    // One event of ~2 MB in 2,000 chunks: one line, read whole.
    const big = {
      type: "ADDED",
      object: { spec: { ports: Array.from({ length: 50_000 }, (_, i) => ({ name: `p${i}`, port: i })) } },
    };
    const bytes = new TextEncoder().encode(`${JSON.stringify(big)}\n`);
    const step = Math.ceil(bytes.length / 2000);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let at = 0; at < bytes.length; at += step) c.enqueue(bytes.slice(at, at + step));
        c.close();
      },
    });
    const seen: WatchEvent[] = [];
    await readWatchStream(stream, (e) => seen.push(e) > 0, { idleMs: 60_000 });
    expect(seen).toEqual([big]);
  });
});

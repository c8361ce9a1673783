// Decodes a watch response: newline-delimited JSON events, read until the server ends the
// stream, the connection fails, or nothing at all arrives for too long (a half-open TCP
// connection would otherwise leave kube-proxy silently stale). One event can be megabytes (a
// Service of 100,000 ports): each chunk is searched for the end of the line alone, and reading
// steps aside between parsing an event and handing it over, so the servers answer meanwhile.

import { TimeSlice } from "../util/time-slice.ts";

export interface WatchEvent {
  type: string;
  object: unknown;
}

export interface ReadWatchOptions {
  /** Fail if neither an event nor a byte arrives for this long. */
  idleMs: number;
  signal?: AbortSignal;
}

/**
 * Calls onEvent for each event. onEvent returns false to stop reading. Resolves when the
 * stream ends or reading was stopped; rejects on a broken stream, bad JSON or idleness.
 */
export async function readWatchStream(
  stream: ReadableStream<Uint8Array>,
  onEvent: (e: WatchEvent) => boolean,
  opts: ReadWatchOptions,
): Promise<void> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  /** The line being read: the text of the chunks before, then this chunk's, joined at its end. */
  const open: string[] = [];
  const slice = new TimeSlice();
  let idle = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const cancel = () => void reader.cancel().catch(() => {});
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      idle = true;
      cancel();
    }, opts.idleMs);
  };
  opts.signal?.addEventListener("abort", cancel, { once: true });

  const deliver = async (line: string): Promise<boolean> => {
    if (line.trim() === "") return true;
    if (slice.due) await slice.pause();
    let event: WatchEvent;
    try {
      event = JSON.parse(line) as WatchEvent;
    } catch {
      throw new Error(`undecodable watch event: ${line.slice(0, 200)}`);
    }
    if (typeof event?.type !== "string") throw new Error(`watch event without a type: ${line.slice(0, 200)}`);
    // A big event's parse may have used the slice: its handling is the next piece of work.
    if (slice.due) await slice.pause();
    return onEvent(event);
  };

  try {
    arm();
    for (;;) {
      const { done, value } = await reader.read();
      if (idle) throw new Error(`watch stream idle for ${opts.idleMs} ms`);
      if (done) break;
      arm();
      const text = decoder.decode(value, { stream: true });
      let from = 0;
      for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", from)) {
        open.push(text.slice(from, nl));
        from = nl + 1;
        const line = open.join("");
        open.length = 0;
        if (!(await deliver(line))) return;
      }
      if (from < text.length) open.push(text.slice(from));
    }
    open.push(decoder.decode());
    await deliver(open.join(""));
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", cancel);
    // Whatever ended reading, let go of the connection (a no-op once the stream is done).
    cancel();
  }
}

// Decodes a watch response: newline-delimited JSON events, read until the server ends the
// stream, the connection fails, or nothing at all arrives for too long (a half-open TCP
// connection would otherwise leave kube-proxy silently stale).

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
  let buffered = "";
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

  const deliver = (line: string): boolean => {
    if (line.trim() === "") return true;
    let event: WatchEvent;
    try {
      event = JSON.parse(line) as WatchEvent;
    } catch {
      throw new Error(`undecodable watch event: ${line.slice(0, 200)}`);
    }
    if (typeof event?.type !== "string") throw new Error(`watch event without a type: ${line.slice(0, 200)}`);
    return onEvent(event);
  };

  try {
    arm();
    for (;;) {
      const { done, value } = await reader.read();
      if (idle) throw new Error(`watch stream idle for ${opts.idleMs} ms`);
      if (done) break;
      arm();
      buffered += decoder.decode(value, { stream: true });
      for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (!deliver(line)) return;
      }
    }
    deliver(buffered + decoder.decode());
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", cancel);
    // Whatever ended reading, let go of the connection (a no-op once the stream is done).
    cancel();
  }
}

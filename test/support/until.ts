// Waiting for an outcome in real-kernel tests: a check polled until it holds, bounded in time
// and in count, never a fixed sleep. Callers pass limits already stretched for the machine
// (scaled() in test/support/kernel-vm.ts).

/** Polls `ready` every `everyMs` until it holds; throws naming `what` once `limitMs` is up. */
export async function until(
  what: string,
  ready: () => Promise<boolean>,
  limitMs: number,
  everyMs = 200,
): Promise<void> {
  const deadline = Date.now() + limitMs;
  for (let i = 0; i < Math.ceil(limitMs / everyMs) + 10; i++) {
    if (await ready()) return;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`${what}: not within ${limitMs} ms`);
}

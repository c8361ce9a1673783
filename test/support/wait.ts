// Bounded waiting for asynchronous outcomes: every poll has a deadline, so a broken
// informer fails its test with a message instead of hanging the suite.

export async function waitFor(
  cond: () => boolean,
  timeoutMs = 5000,
  what = "condition",
  intervalMs = 10,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Lets pending I/O and timers run for a while (to show something did NOT happen). */
export function settle(ms = 200): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// The one place that knows which JavaScript runtime we are on. src/ otherwise uses only node:
// built-ins and web APIs, so the same code runs under Bun (the shipped binary), Deno and Node.

interface RuntimeGlobals {
  Bun?: { version: string; gc?(force: boolean): unknown };
  Deno?: { version: { deno: string } };
  /** Node's, when run with --expose-gc. */
  gc?: () => void;
}

export function runtimeName(): string {
  const g = globalThis as unknown as RuntimeGlobals;
  if (g.Bun) return `bun ${g.Bun.version}`;
  if (g.Deno) return `deno ${g.Deno.version.deno}`;
  return `node ${process.versions.node}`;
}

// Explicit collections are for the long-running daemon only (realRun turns them on): they cost
// sync time (Bun.gc(true) also drops compiled code, so the next sync starts cold), which only
// pays off in a process that lives on; a dry run, the tests and in-process benchmarks keep the
// runtime's own pacing and timings.
let collections = false;

/** Turns on the collections below (off by default). */
export function enableGarbageCollections(): void {
  collections = true;
}

/**
 * Collects recent garbage now where the runtime offers that cheaply (Bun: Bun.gc(false), about
 * a millisecond); elsewhere nothing, as V8 scavenges young garbage often on its own. For long
 * synchronous jobs that make garbage by the hundred megabytes: JSC, left alone, lets it pile up
 * to about the size of the live heap before it collects.
 */
export function collectYoungGarbage(): void {
  if (collections) (globalThis as unknown as RuntimeGlobals).Bun?.gc?.(false);
}

/**
 * collectYoungGarbage even where collections are off: for a one-off job, such as writing a dry
 * run's report, whose pieces are garbage as soon as they are written and would otherwise pile
 * up to hundreds of megabytes before the runtime collects them.
 */
export function collectYoungGarbageAnyway(): void {
  (globalThis as unknown as RuntimeGlobals).Bun?.gc?.(false);
}

/**
 * collectGarbage even where collections are off: for a one-off job that makes hundreds of
 * megabytes of garbage in a run (a big restore input made as it is read, in a dry run too).
 */
export function collectGarbageAnyway(): void {
  const g = globalThis as unknown as RuntimeGlobals;
  if (g.Bun?.gc) g.Bun.gc(true);
  else g.gc?.();
}

/**
 * A full collection now, where the runtime allows it (Bun, which also hands freed memory back
 * to the system; Node run with --expose-gc). For the moment right after something big became
 * garbage and before something big is built: a collection left to the runtime would come
 * later, on top of both.
 */
export function collectGarbage(): void {
  if (collections) collectGarbageAnyway();
}

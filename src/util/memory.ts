// The process's memory figures for logs, in MiB: the RSS next to the JavaScript heap, because a
// heap much smaller than the RSS points at memory held outside it (strings, buffers) or freed
// but not yet returned to the system. process.memoryUsage() is there under Bun, Deno and Node.

const MiB = 1024 * 1024;

export interface MemoryFigures {
  readonly rssMiB: number;
  readonly heapUsedMiB: number;
  readonly heapTotalMiB: number;
  readonly externalMiB: number;
}

export function memoryFigures(): MemoryFigures {
  const m = process.memoryUsage();
  const round = (bytes: number) => Math.round(bytes / MiB);
  return {
    rssMiB: round(m.rss),
    heapUsedMiB: round(m.heapUsed),
    heapTotalMiB: round(m.heapTotal),
    externalMiB: round(m.external),
  };
}

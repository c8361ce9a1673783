// The one place that knows which JavaScript runtime we are on. src/ otherwise uses only node:
// built-ins and web APIs, so the same code runs under Bun (the shipped binary), Deno and Node.

interface RuntimeGlobals {
  Bun?: { version: string };
  Deno?: { version: { deno: string } };
}

export function runtimeName(): string {
  const g = globalThis as unknown as RuntimeGlobals;
  if (g.Bun) return `bun ${g.Bun.version}`;
  if (g.Deno) return `deno ${g.Deno.version.deno}`;
  return `node ${process.versions.node}`;
}

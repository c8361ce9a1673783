// A stateful in-memory kernel (tests and replay): the release and module sets a test gives, where loading a
// loadable module makes it loaded.

import { normalizeModuleName } from "./client.ts";
import type { KernelClient } from "./types.ts";

export interface SimulatedKernelOptions {
  version: string;
  loaded?: Iterable<string>;
  builtin?: Iterable<string>;
  /** Modules that loadModule can load. */
  loadable?: Iterable<string>;
  /** What modules() reports as read, e.g. ["--state HostState"]. */
  sources?: string[];
}

export interface SimulatedKernel extends KernelClient {
  readonly loaded: Set<string>;
  readonly builtin: Set<string>;
  readonly loadable: Set<string>;
}

/** A stateful kernel: loading a loadable module makes it loaded. */
export function createSimulatedKernel(opts: SimulatedKernelOptions): SimulatedKernel {
  const norm = (names: Iterable<string> = []) => new Set([...names].map(normalizeModuleName));
  const loaded = norm(opts.loaded);
  const builtin = norm(opts.builtin);
  const loadable = norm(opts.loadable);
  const present = (name: string) => loaded.has(name) || builtin.has(name);
  const notFound = (name: string) => ({
    ok: false,
    detail: `modprobe ${name} failed: modprobe: FATAL: Module ${name} not found in directory /lib/modules/${opts.version}`,
  });

  return {
    loaded,
    builtin,
    loadable,
    version: async () => opts.version,
    modules: async () => ({
      loaded: new Set(loaded),
      builtin: new Set(builtin),
      loadable: new Set(loadable),
      sources: [...(opts.sources ?? [])],
    }),
    async loadModule(name) {
      const n = normalizeModuleName(name);
      if (present(n)) return { ok: true, detail: `loaded module ${name}` };
      if (!loadable.has(n)) return notFound(name);
      loadable.delete(n);
      loaded.add(n);
      return { ok: true, detail: `loaded module ${name}` };
    },
    async probeModule(name) {
      const n = normalizeModuleName(name);
      if (present(n) || loadable.has(n)) return { ok: true, detail: `module ${name} is available` };
      return notFound(name);
    },
  };
}

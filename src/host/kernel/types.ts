// What the kernel client tells the mode checks: the release, which modules are present, and
// what modprobe said when asked to load or probe one.

export interface KernelModules {
  /** Modules currently loaded (/proc/modules). */
  loaded: Set<string>;
  /** Modules compiled into the kernel (modules.builtin, or =y in the boot config). */
  builtin: Set<string>;
  /** Modules known to exist as loadable files but not loaded (=m in the boot config). */
  loadable: Set<string>;
  /** Files actually read, for the operator-facing check detail. */
  sources: string[];
}

export interface ModuleResult {
  ok: boolean;
  detail: string;
}

export interface KernelClient {
  version(): Promise<string>;
  modules(): Promise<KernelModules>;
  /** Loads a module with modprobe. */
  loadModule(name: string): Promise<ModuleResult>;
  /** Asks modprobe whether a module could be loaded, without loading it. */
  probeModule(name: string): Promise<ModuleResult>;
}

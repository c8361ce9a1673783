// Watches the --config file during a real run. Upstream kube-proxy exits with an error as soon as
// its configuration file is written or renamed, so that the DaemonSet restarts it with the new
// settings; here the file is polled instead of watched through inotify: that works the same under
// Bun, Deno and Node, and follows a ConfigMap mount's symlink swap or an editor's rename-replace.
// Only a change of content counts (a touch does not); a file that is gone ends the run too.

import { readFileSync, statSync } from "node:fs";
import { errText } from "../util/err-text.ts";

export interface ConfigChange {
  /** "changed": different content; "gone": the path no longer leads to a readable file. */
  readonly kind: "changed" | "gone";
  readonly detail: string;
}

export interface ConfigWatch {
  /** Resolves at the first change seen; stays pending while the content is the same. */
  readonly changed: Promise<ConfigChange>;
  stop(): void;
}

export interface ConfigWatchOptions {
  readonly path: string;
  /** The content the run was configured from (what --config read at startup). */
  readonly initial: string;
  /** Poll period; upstream reacts to inotify at once, a second is close enough for a restart. */
  readonly intervalMs?: number;
}

const DEFAULT_INTERVAL_MS = 1000;

/**
 * One look at the file. The decoded text is compared (the way it was loaded, so bytes that are not
 * UTF-8 cannot fake a change); a file far larger than the original is a change without reading.
 */
export function compareConfigFile(path: string, initial: string): ConfigChange | undefined {
  try {
    const size = statSync(path).size;
    const limit = 2 * new TextEncoder().encode(initial).length + 65536;
    if (size > limit) return { kind: "changed", detail: `grew to ${size} bytes` };
    return readFileSync(path, "utf8") === initial ? undefined : { kind: "changed", detail: "new content" };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? errText(err);
    return { kind: "gone", detail: code };
  }
}

/** Polls `path` until its content differs from `initial` (or it is gone), then resolves once. */
export function watchConfigFile(opts: ConfigWatchOptions): ConfigWatch {
  const intervalMs = opts.intervalMs ?? DEFAULT_INTERVAL_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let report: (change: ConfigChange) => void = () => {};
  const changed = new Promise<ConfigChange>((resolve) => {
    report = resolve;
  });
  const tick = () => {
    if (stopped) return;
    const change = compareConfigFile(opts.path, opts.initial);
    if (change) {
      stopped = true;
      report(change);
      return;
    }
    schedule();
  };
  const schedule = () => {
    timer = setTimeout(tick, intervalMs);
    // The watch alone must never keep the process alive.
    (timer as { unref?: () => void }).unref?.();
  };
  schedule();
  return {
    changed,
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}

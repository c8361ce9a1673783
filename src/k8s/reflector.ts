// One resource's list-then-watch loop (client-go's Reflector plus the informer's cache). It
// lists once, then watches from the list's resourceVersion for as long as it runs:
// - a watch that ends or breaks is re-opened from the last resourceVersion seen, after a
//   jittered backoff when it failed, so nothing is re-delivered and nothing is missed;
// - 410 Expired (history compacted past our resourceVersion) relists, and the relist is
//   diffed against the cache, so only objects really gone are reported deleted;
// - an outage only delays delivery: nothing is dropped while the API server is away.

import type { Logger } from "../log/logger.ts";
import { collectYoungGarbage } from "../runtime.ts";
import { Backoff, type BackoffOptions, sleep } from "../util/backoff.ts";
import { type ApiClient, apiErrorFrom, describeError } from "./api-client.ts";
import { dropUnreadMetadata } from "./cached-forms.ts";
import { readListStream } from "./list-stream.ts";
import { type KubeObject, ObjectStore, objectKey } from "./store.ts";
import { readWatchStream, type WatchEvent } from "./watch-stream.ts";

export interface ReflectorHandler<T> {
  added(obj: T): void;
  updated(previous: T, current: T): void;
  /** obj is the final state the server reported (or the last cached one after a relist). */
  deleted(obj: T): void;
  /** Once, after the first list has been delivered in full. */
  synced(): void;
}

export interface ReflectorOptions<T extends KubeObject = KubeObject> {
  /** Kind of the objects (filled into list items, which arrive without it). */
  kind: string;
  apiVersion: string;
  /** Collection path, e.g. /api/v1/services. */
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  client: ApiClient;
  logger: Logger;
  backoff?: BackoffOptions;
  /** Server-side watch timeout; client-go picks 5..10 minutes at random to spread reconnects. */
  watchTimeoutSeconds?: () => number;
  /** How long past the watch timeout a silent stream is trusted before it is dropped. */
  idleSlackMs?: number;
  /**
   * What the cache keeps of each object, when not all of it (see cached-forms.ts). Handlers
   * then get that form as an update's `previous` and as a relisted-away deletion, and resync()
   * re-delivers nothing: it would hand them the cut-down form as the current state.
   */
  cached?: (obj: T) => T;
}

type WatchOutcome =
  | { kind: "closed"; events: number }
  | { kind: "expired"; events: number }
  | { kind: "failed"; events: number; error: string };

/**
 * Objects delivered between two young-generation collections while a list is delivered: the
 * handlers turn each object into their own state and leave garbage behind (a 10,000-slice list
 * leaves tens of MB), which is better collected as it comes than all at the end.
 */
const DELIVERIES_PER_COLLECTION = 1000;

/** A watch that lived this long counts as healthy, so its end does not lengthen the backoff. */
const HEALTHY_WATCH_MS = 1000;

const defaultWatchTimeout = () => 300 + Math.floor(Math.random() * 300);

export class Reflector<T extends KubeObject> {
  readonly store: ObjectStore<T>;
  private resourceVersion = "";
  private stopped = false;
  private hasSynced = false;
  private loop?: Promise<void>;
  private readonly life = new AbortController();
  private readonly backoff: Backoff;
  private readonly log: Logger;

  constructor(
    private readonly opts: ReflectorOptions<T>,
    private readonly handler: ReflectorHandler<T>,
  ) {
    this.backoff = new Backoff(opts.backoff);
    this.log = opts.logger;
    this.store = new ObjectStore<T>(opts.cached);
  }

  /** The resourceVersion the next watch would resume from. */
  get lastResourceVersion(): string {
    return this.resourceVersion;
  }

  get synced(): boolean {
    return this.hasSynced;
  }

  /** Starts the loop; resolves once the first list attempt has finished (or failed). */
  start(): Promise<void> {
    if (this.loop) return Promise.resolve();
    return new Promise((firstAttempt) => {
      this.loop = this.run(firstAttempt);
    });
  }

  /**
   * Re-delivers every cached object as an update of itself (client-go's informer resync, every
   * configSyncPeriod upstream). Handlers see no difference, so nothing is re-programmed; what
   * counts updates (the change metrics) counts them, as upstream's does.
   */
  resync(): void {
    if (!this.hasSynced || this.opts.cached) return;
    for (const obj of this.store.values()) this.call(() => this.handler.updated(obj, obj));
  }

  /** Ends the loop; no handler is called once this resolves. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.life.abort();
    await this.loop;
  }

  private async run(firstAttempt: () => void): Promise<void> {
    // "0" lets the API server answer from its watch cache (cheap at scale, as client-go does);
    // after 410 Expired we need the real current state, hence a consistent read ("").
    let listFrom = "0";
    let needList = true;
    try {
      while (!this.stopped) {
        if (needList) {
          const listed = await this.list(listFrom);
          firstAttempt();
          if (this.stopped) return;
          if (listed !== "ok") {
            if (listed === "expired") listFrom = "";
            await sleep(this.backoff.next(), this.life.signal);
            continue;
          }
          needList = false;
        }
        const started = Date.now();
        const outcome = await this.watch();
        if (this.stopped) return;
        if (outcome.events > 0 || Date.now() - started >= HEALTHY_WATCH_MS) this.backoff.reset();
        switch (outcome.kind) {
          case "expired":
            this.log.v(2).info("Watch expired, relisting", {
              resource: this.opts.kind,
              resourceVersion: this.resourceVersion,
            });
            needList = true;
            listFrom = "";
            if (outcome.events === 0) await sleep(this.backoff.next(), this.life.signal);
            break;
          case "failed": {
            const delay = this.backoff.next();
            this.log.warn("Watch failed, will resume", {
              resource: this.opts.kind,
              resourceVersion: this.resourceVersion,
              retryInMs: Math.round(delay),
              err: outcome.error,
            });
            await sleep(delay, this.life.signal);
            break;
          }
          case "closed":
            this.log.v(4).info("Watch closed, resuming", {
              resource: this.opts.kind,
              resourceVersion: this.resourceVersion,
            });
            if (Date.now() - started < HEALTHY_WATCH_MS && outcome.events === 0) {
              await sleep(this.backoff.next(), this.life.signal);
            }
            break;
        }
      }
    } finally {
      firstAttempt();
    }
  }

  private query(extra: Record<string, string>): Record<string, string | undefined> {
    return { labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector, ...extra };
  }

  private async list(from: string): Promise<"ok" | "expired" | "failed"> {
    try {
      const seen = new Set<string>();
      let delivered = 0;
      const deliver = (fn: () => void) => {
        this.call(fn);
        if (++delivered % DELIVERIES_PER_COLLECTION === 0) collectYoungGarbage();
      };
      // Each item is applied and delivered as it arrives, and is garbage once the handler has
      // made its own state of it: the list is never held whole.
      const meta = await this.fetchList(from, (item) => {
        const obj = item as T;
        this.typed(obj);
        seen.add(objectKey(obj));
        const r = this.store.apply(obj);
        if (r.change === "added") deliver(() => this.handler.added(obj));
        else if (r.change === "updated") deliver(() => this.handler.updated(r.previous, obj));
      });
      if (meta === "expired") return "expired";
      if (this.stopped) return "failed";
      for (const obj of this.store.removeUnseen(seen)) {
        this.log.v(2).info("Object gone after relist", { resource: this.opts.kind, key: objectKey(obj) });
        deliver(() => this.handler.deleted(obj));
      }
      this.resourceVersion = meta.resourceVersion ?? "";
      this.log.v(2).info("Listed", {
        resource: this.opts.kind,
        count: this.store.size,
        resourceVersion: this.resourceVersion,
      });
      if (!this.hasSynced) {
        this.hasSynced = true;
        this.call(() => this.handler.synced());
      }
      return "ok";
    } catch (err) {
      if (!this.stopped)
        this.log.error("Failed to list", { resource: this.opts.kind, err: describeError(err) });
      return "failed";
    }
  }

  /**
   * Reads the list, handing each item to onItem as it arrives (list-stream.ts); resolves with
   * the list's metadata, or "expired". A list cut off half way throws after some items were
   * delivered: the next list's diff reconciles them, as after any relist.
   */
  private async fetchList(
    from: string,
    onItem: (item: unknown) => void,
  ): Promise<{ resourceVersion?: string } | "expired"> {
    const res = await this.opts.client.request({
      method: "GET",
      path: this.opts.path,
      query: this.query({ resourceVersion: from }),
      signal: this.life.signal,
      streamBody: true,
    });
    if (res.status === 410) {
      this.log.v(2).info("List expired, relisting from the current state", { resource: this.opts.kind });
      return "expired";
    }
    if (res.status < 200 || res.status > 299) throw await apiErrorFrom(res, `list ${this.opts.kind}`);
    const stream = res.stream();
    if (!stream) throw new Error(`list ${this.opts.kind}: the response has no body`);
    const top = await readListStream(stream, onItem);
    const meta = top.metadata as { resourceVersion?: unknown } | undefined;
    return typeof meta?.resourceVersion === "string" ? { resourceVersion: meta.resourceVersion } : {};
  }

  private async watch(): Promise<WatchOutcome> {
    const timeoutSeconds = (this.opts.watchTimeoutSeconds ?? defaultWatchTimeout)();
    let events = 0;
    let ending: WatchOutcome | undefined;
    try {
      const res = await this.opts.client.request({
        method: "GET",
        path: this.opts.path,
        query: this.query({
          watch: "true",
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: "true",
          timeoutSeconds: String(timeoutSeconds),
        }),
        signal: this.life.signal,
      });
      if (res.status === 410) return { kind: "expired", events };
      if (res.status !== 200) throw await apiErrorFrom(res, `watch ${this.opts.kind}`);
      const stream = res.stream();
      if (!stream) throw new Error("watch response has no body");
      const onEvent = (e: WatchEvent): boolean => {
        if (this.stopped) return false;
        events++;
        ending = this.handleEvent(e);
        return ending === undefined;
      };
      await readWatchStream(stream, onEvent, {
        idleMs: timeoutSeconds * 1000 + (this.opts.idleSlackMs ?? 30_000),
        signal: this.life.signal,
      });
      return ending ? { ...ending, events } : { kind: "closed", events };
    } catch (err) {
      return { kind: "failed", events, error: describeError(err) };
    }
  }

  /** Applies one event; returns how the watch ends if the event ends it. */
  private handleEvent(e: WatchEvent): WatchOutcome | undefined {
    const obj = e.object as T | undefined;
    switch (e.type) {
      case "ADDED":
      case "MODIFIED": {
        if (!obj?.metadata) return { kind: "failed", events: 0, error: `${e.type} event without an object` };
        this.typed(obj);
        const r = this.store.apply(obj);
        if (r.change === "added") this.call(() => this.handler.added(obj));
        else if (r.change === "updated") this.call(() => this.handler.updated(r.previous, obj));
        break;
      }
      case "DELETED": {
        if (!obj?.metadata) return { kind: "failed", events: 0, error: "DELETED event without an object" };
        this.typed(obj);
        if (this.store.remove(obj)) this.call(() => this.handler.deleted(obj));
        break;
      }
      case "BOOKMARK":
        break;
      case "ERROR": {
        const s = (e.object ?? {}) as { code?: number; reason?: string; message?: string };
        if (s.code === 410 || s.reason === "Expired" || s.reason === "Gone")
          return { kind: "expired", events: 0 };
        return {
          kind: "failed",
          events: 0,
          error: `watch error ${s.code ?? "?"} ${s.reason ?? ""}: ${s.message ?? ""}`,
        };
      }
      default:
        return { kind: "failed", events: 0, error: `unknown watch event type ${JSON.stringify(e.type)}` };
    }
    const rv = obj?.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
    return undefined;
  }

  /**
   * List items come without kind and apiVersion; fill them so every delivered object is whole.
   * What nothing reads goes (dropUnreadMetadata): it would be kept in the cache for nothing.
   */
  private typed(obj: T): void {
    const o = obj as { kind?: string; apiVersion?: string };
    o.kind ??= this.opts.kind;
    o.apiVersion ??= this.opts.apiVersion;
    dropUnreadMetadata(obj);
  }

  /** A throwing handler must not stop the watch: everything after it would be missed. */
  private call(fn: () => void): void {
    if (this.stopped) return;
    try {
      fn();
    } catch (err) {
      this.log.error("Event handler failed", { resource: this.opts.kind, err: describeError(err) });
    }
  }
}

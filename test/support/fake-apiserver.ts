// An in-process Kubernetes API server for tests: Services, EndpointSlices, Nodes and Events
// with real list/watch semantics (one global resourceVersion, a bounded event history, 410
// Expired for resource versions older than that history) and controls for the failures an
// informer must survive: dropped watch streams, compaction, outages.

import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { tempDir } from "./binary.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";

export type FakeKind = "Service" | "EndpointSlice" | "Node" | "ServiceCIDR" | "Event";
export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

// biome-ignore lint/suspicious/noExplicitAny: stored objects are arbitrary JSON
export type KObject = Record<string, any> & {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    resourceVersion?: string;
    [k: string]: unknown;
  };
};

export interface RequestRecord {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly kind?: FakeKind;
  readonly watch: boolean;
}

export interface FakeApiServerOptions {
  /** How many change events a watch can be resumed across (older RVs get 410). */
  historyLimit?: number;
  /** When set, every request must carry `Authorization: Bearer <token>`. */
  token?: string;
  /** Sends a BOOKMARK to bookmark-enabled watches this often; 0 (default) only on sendBookmarks(). */
  bookmarkIntervalMs?: number;
  /**
   * Also serve on this Unix socket path (besides 127.0.0.1). The filesystem is shared across
   * network namespaces, so a forwarder inside one can reach the server without any link to it.
   */
  socketPath?: string;
}

interface KindInfo {
  apiVersion: string;
  namespaced: boolean;
}

const KINDS: Record<FakeKind, KindInfo> = {
  Service: { apiVersion: "v1", namespaced: true },
  EndpointSlice: { apiVersion: "discovery.k8s.io/v1", namespaced: true },
  Node: { apiVersion: "v1", namespaced: false },
  ServiceCIDR: { apiVersion: "networking.k8s.io/v1", namespaced: false },
  Event: { apiVersion: "events.k8s.io/v1", namespaced: true },
};

interface Route {
  kind: FakeKind;
  apiVersion: string;
  namespace?: string;
  name?: string;
}

const ROUTES: { re: RegExp; kind: FakeKind; apiVersion: string }[] = [
  { re: /^\/api\/v1\/(?:namespaces\/([^/]+)\/)?services(?:\/([^/]+))?$/, kind: "Service", apiVersion: "v1" },
  {
    re: /^\/apis\/discovery\.k8s\.io\/v1\/(?:namespaces\/([^/]+)\/)?endpointslices(?:\/([^/]+))?$/,
    kind: "EndpointSlice",
    apiVersion: "discovery.k8s.io/v1",
  },
  { re: /^\/api\/v1\/nodes(?:\/([^/]+))?$/, kind: "Node", apiVersion: "v1" },
  {
    re: /^\/apis\/networking\.k8s\.io\/v1\/servicecidrs(?:\/([^/]+))?$/,
    kind: "ServiceCIDR",
    apiVersion: "networking.k8s.io/v1",
  },
  { re: /^\/api\/v1\/(?:namespaces\/([^/]+)\/)?events(?:\/([^/]+))?$/, kind: "Event", apiVersion: "v1" },
  {
    re: /^\/apis\/events\.k8s\.io\/v1\/(?:namespaces\/([^/]+)\/)?events(?:\/([^/]+))?$/,
    kind: "Event",
    apiVersion: "events.k8s.io/v1",
  },
];

function route(pathname: string): Route | undefined {
  for (const r of ROUTES) {
    const m = r.re.exec(pathname);
    if (!m) continue;
    if (r.kind === "Node" || r.kind === "ServiceCIDR")
      return { kind: r.kind, apiVersion: r.apiVersion, ...(m[1] ? { name: m[1] } : {}) };
    return {
      kind: r.kind,
      apiVersion: r.apiVersion,
      ...(m[1] ? { namespace: m[1] } : {}),
      ...(m[2] ? { name: m[2] } : {}),
    };
  }
  return undefined;
}

interface HistoryEntry {
  rv: number;
  kind: FakeKind;
  type: "ADDED" | "MODIFIED" | "DELETED";
  prev?: KObject;
  obj: KObject;
}

interface Watcher {
  kind: FakeKind;
  namespace?: string;
  matches: (o: KObject) => boolean;
  bookmarks: boolean;
  res: ServerResponse;
  timer?: ReturnType<typeof setTimeout>;
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

function status(code: number, reason: string, message: string): KObject {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code };
}

function keyOf(o: KObject): string {
  return `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;
}

export class FakeApiServer {
  readonly requests: RequestRecord[] = [];
  /** Answer every request with 503 and drop watches: an API server outage. */
  outage = false;
  /** Answer Event POSTs with 403 Forbidden (RBAC without events permission). */
  denyEvents = false;

  private readonly store = new Map<FakeKind, Map<string, KObject>>();
  private readonly history: HistoryEntry[] = [];
  private readonly watchers = new Set<Watcher>();
  private rv = 1;
  /** Watches and lists must start at or after this RV; older ones are Expired. */
  private oldestValidRv = 1;
  private expireNext = false;
  private bookmarkTimer?: ReturnType<typeof setInterval>;

  private constructor(
    private readonly servers: readonly Server[],
    readonly url: string,
    private readonly opts: FakeApiServerOptions,
  ) {
    for (const k of Object.keys(KINDS) as FakeKind[]) this.store.set(k, new Map());
    if (opts.bookmarkIntervalMs) {
      this.bookmarkTimer = setInterval(() => this.sendBookmarks(), opts.bookmarkIntervalMs);
    }
  }

  static async start(opts: FakeApiServerOptions = {}): Promise<FakeApiServer> {
    let self: FakeApiServer | undefined;
    const listener = (req: IncomingMessage, res: ServerResponse) => {
      self?.handle(req, res).catch((err) => {
        if (!res.headersSent) send(res, 500, status(500, "InternalError", String(err)));
      });
    };
    const server = createServer(listener);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const servers = [server];
    if (opts.socketPath) {
      const path = opts.socketPath;
      const unix = createServer(listener);
      await new Promise<void>((resolve, reject) => {
        unix.once("error", reject);
        unix.listen(path, resolve);
      });
      servers.push(unix);
    }
    const port = (server.address() as AddressInfo).port;
    self = new FakeApiServer(servers, `http://127.0.0.1:${port}`, opts);
    return self;
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  // ---- test controls: objects ----

  create(kind: FakeKind, obj: KObject): KObject {
    const o = this.normalise(kind, obj);
    const map = this.store.get(kind)!;
    if (map.has(keyOf(o))) throw new Error(`${kind} ${keyOf(o)} already exists`);
    o.metadata!.uid ??= randomUUID();
    o.metadata!.creationTimestamp ??= new Date().toISOString();
    return this.commit("ADDED", kind, undefined, o);
  }

  update(kind: FakeKind, obj: KObject): KObject {
    const o = this.normalise(kind, obj);
    const prev = this.store.get(kind)!.get(keyOf(o));
    if (!prev) throw new Error(`${kind} ${keyOf(o)} does not exist`);
    o.metadata!.uid = prev.metadata?.uid;
    o.metadata!.creationTimestamp = prev.metadata?.creationTimestamp;
    return this.commit("MODIFIED", kind, prev, o);
  }

  delete(kind: FakeKind, obj: KObject): KObject {
    const o = this.normalise(kind, obj);
    const prev = this.store.get(kind)!.get(keyOf(o));
    if (!prev) throw new Error(`${kind} ${keyOf(o)} does not exist`);
    return this.commit("DELETED", kind, prev, clone(prev));
  }

  get(kind: FakeKind, namespace: string | undefined, name: string): KObject | undefined {
    const ns = KINDS[kind].namespaced ? (namespace ?? "default") : "";
    const o = this.store.get(kind)!.get(`${ns}/${name}`);
    return o ? clone(o) : undefined;
  }

  list(kind: FakeKind): KObject[] {
    return [...this.store.get(kind)!.values()].map(clone);
  }

  // ---- test controls: failures ----

  /** Ends every open watch stream abruptly (socket destroyed mid-stream). */
  disconnectWatches(): void {
    for (const w of this.watchers) {
      this.dropWatcher(w);
      w.res.socket?.destroy();
    }
  }

  /** Forgets the event history: every resourceVersion handed out so far becomes too old. */
  compactHistory(): void {
    this.history.length = 0;
    this.rv++;
    this.oldestValidRv = this.rv;
  }

  /** The next watch request gets a 410 Expired ERROR event whatever its resourceVersion. */
  expireNextWatch(): void {
    this.expireNext = true;
  }

  /** Sends a BOOKMARK at the current resourceVersion to every watch that asked for them. */
  sendBookmarks(): void {
    for (const w of this.watchers) {
      if (!w.bookmarks) continue;
      const apiVersion = KINDS[w.kind].apiVersion;
      writeEvent(w.res, "BOOKMARK", {
        kind: w.kind,
        apiVersion,
        metadata: { resourceVersion: String(this.rv) },
      });
    }
  }

  /** Starts or ends an outage; starting one also drops every open watch. */
  setOutage(on: boolean): void {
    this.outage = on;
    if (on) this.disconnectWatches();
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  /** Events posted through either events API, oldest first. */
  get postedEvents(): KObject[] {
    return this.list("Event");
  }

  requestsFor(kind: FakeKind, what: "list" | "watch"): RequestRecord[] {
    return this.requests.filter(
      (r) => r.kind === kind && r.method === "GET" && r.watch === (what === "watch"),
    );
  }

  async close(): Promise<void> {
    if (this.bookmarkTimer) clearInterval(this.bookmarkTimer);
    this.disconnectWatches();
    await Promise.all(
      this.servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections?.();
          }),
      ),
    );
  }

  // ---- internals ----

  private normalise(kind: FakeKind, obj: KObject): KObject {
    const o = clone(obj);
    o.apiVersion ??= KINDS[kind].apiVersion;
    o.kind = kind;
    o.metadata ??= {};
    if (!o.metadata.name) throw new Error(`${kind} needs metadata.name`);
    if (KINDS[kind].namespaced) o.metadata.namespace ??= "default";
    else delete o.metadata.namespace;
    return o;
  }

  private commit(
    type: HistoryEntry["type"],
    kind: FakeKind,
    prev: KObject | undefined,
    obj: KObject,
  ): KObject {
    this.rv++;
    obj.metadata!.resourceVersion = String(this.rv);
    const map = this.store.get(kind)!;
    if (type === "DELETED") map.delete(keyOf(obj));
    else map.set(keyOf(obj), obj);
    const entry: HistoryEntry = { rv: this.rv, kind, type, obj: clone(obj), ...(prev ? { prev } : {}) };
    this.history.push(entry);
    const limit = this.opts.historyLimit ?? 1000;
    while (this.history.length > limit) {
      const dropped = this.history.shift()!;
      this.oldestValidRv = dropped.rv;
    }
    for (const w of this.watchers) if (w.kind === kind) deliver(w, entry);
    return clone(obj);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const query = Object.fromEntries(url.searchParams);
    const r = route(url.pathname);
    const watch = query.watch === "true" || query.watch === "1";
    this.requests.push({
      method: req.method ?? "GET",
      path: url.pathname,
      query,
      watch,
      ...(r ? { kind: r.kind } : {}),
    });
    const body = req.method === "POST" || req.method === "PUT" ? await readBody(req) : "";

    if (this.outage) return send(res, 503, status(503, "ServiceUnavailable", "the server is unavailable"));
    if (this.opts.token && req.headers.authorization !== `Bearer ${this.opts.token}`) {
      return send(res, 401, status(401, "Unauthorized", "Unauthorized"));
    }
    if (!r) return send(res, 404, status(404, "NotFound", `the server could not find ${url.pathname}`));

    if (req.method === "GET" && r.name && !watch) {
      const o = this.get(r.kind, r.namespace, r.name);
      return o
        ? send(res, 200, o)
        : send(res, 404, status(404, "NotFound", `${r.kind} "${r.name}" not found`));
    }
    if (req.method === "GET" && watch) return this.watch(r, query, res);
    if (req.method === "GET") return this.listResponse(r, query, res);
    if (req.method === "POST") return this.post(r, body, res);
    return send(res, 405, status(405, "MethodNotAllowed", `${req.method} is not supported`));
  }

  private selection(r: Route, query: Record<string, string>): (o: KObject) => boolean {
    const labels = parseLabelSelector(query.labelSelector);
    const fields = parseFieldSelector(query.fieldSelector);
    return (o) =>
      (!r.namespace || o.metadata?.namespace === r.namespace) &&
      (!r.name || o.metadata?.name === r.name) &&
      labels(o.metadata?.labels ?? {}) &&
      fields(o);
  }

  private tooOld(rvParam: string | undefined): boolean {
    if (!rvParam || rvParam === "0") return false;
    return Number(rvParam) < this.oldestValidRv;
  }

  private listResponse(r: Route, query: Record<string, string>, res: ServerResponse): void {
    if (this.tooOld(query.resourceVersion)) {
      send(res, 410, status(410, "Expired", `too old resource version: ${query.resourceVersion}`));
      return;
    }
    const pick = this.selection(r, query);
    const items = [...this.store.get(r.kind)!.values()].filter(pick).map((o) => {
      // The API server omits kind and apiVersion on list items.
      const { kind: _k, apiVersion: _a, ...rest } = clone(o);
      return rest;
    });
    send(res, 200, {
      kind: `${r.kind}List`,
      apiVersion: r.apiVersion,
      metadata: { resourceVersion: String(this.rv) },
      items,
    });
  }

  private watch(r: Route, query: Record<string, string>, res: ServerResponse): void {
    res.writeHead(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
    res.flushHeaders();
    const rvParam = query.resourceVersion;
    if (this.expireNext || this.tooOld(rvParam)) {
      this.expireNext = false;
      writeEvent(
        res,
        "ERROR",
        status(410, "Expired", `too old resource version: ${rvParam} (${this.oldestValidRv})`),
      );
      res.end();
      return;
    }
    const w: Watcher = {
      kind: r.kind,
      matches: this.selection(r, query),
      bookmarks: query.allowWatchBookmarks === "true",
      res,
    };
    if (!rvParam || rvParam === "0") {
      // No starting point: the current state arrives as synthetic ADDED events.
      for (const o of this.store.get(r.kind)!.values()) if (w.matches(o)) writeEvent(res, "ADDED", o);
    } else {
      const from = Number(rvParam);
      for (const e of this.history) if (e.kind === r.kind && e.rv > from) deliver(w, e);
    }
    const timeout = Number(query.timeoutSeconds ?? 0);
    if (timeout > 0) {
      w.timer = setTimeout(() => {
        this.dropWatcher(w);
        res.end();
      }, timeout * 1000);
    }
    res.on("close", () => this.dropWatcher(w));
    this.watchers.add(w);
  }

  private dropWatcher(w: Watcher): void {
    if (w.timer) clearTimeout(w.timer);
    this.watchers.delete(w);
  }

  private post(r: Route, body: string, res: ServerResponse): void {
    let obj: KObject;
    try {
      obj = JSON.parse(body) as KObject;
    } catch {
      send(res, 400, status(400, "BadRequest", "body is not JSON"));
      return;
    }
    if (r.kind === "Event" && this.denyEvents) {
      send(res, 403, status(403, "Forbidden", `events is forbidden in namespace ${r.namespace}`));
      return;
    }
    obj.metadata ??= {};
    if (r.namespace) obj.metadata.namespace = r.namespace;
    if (!obj.metadata.name && typeof obj.metadata.generateName === "string") {
      obj.metadata.name = `${obj.metadata.generateName}${randomUUID().slice(0, 5)}`;
    }
    obj.apiVersion = r.apiVersion;
    try {
      send(res, 201, this.create(r.kind, obj));
    } catch (err) {
      send(res, 409, status(409, "AlreadyExists", String(err)));
    }
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function send(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

function writeEvent(res: ServerResponse, type: WatchEventType, object: unknown): void {
  if (!res.writableEnded && !res.destroyed) res.write(`${JSON.stringify({ type, object })}\n`);
}

/** What one watcher sees of a change: objects moving in or out of its selection are added or deleted. */
function deliver(w: Watcher, e: HistoryEntry): void {
  const was = e.prev ? w.matches(e.prev) : false;
  const is = w.matches(e.obj);
  if (e.type === "DELETED") {
    if (was) writeEvent(w.res, "DELETED", e.obj);
  } else if (is) writeEvent(w.res, was ? "MODIFIED" : "ADDED", e.obj);
  else if (was) writeEvent(w.res, "DELETED", e.obj);
}

/** Writes a kubeconfig for the fake server (plain http; bearer token if given) and returns its path. */
export function kubeconfigFor(server: { url: string }, opts: { token?: string; dir?: string } = {}): string {
  const dir = opts.dir ?? tempDir("kpts-kubeconfig-");
  const path = join(dir, "kubeconfig");
  const user = opts.token ? `\n    token: ${opts.token}` : " {}";
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: fake",
      "  cluster:",
      `    server: ${server.url}`,
      "users:",
      "- name: tester",
      `  user:${user}`,
      "contexts:",
      "- name: fake",
      "  context:",
      "    cluster: fake",
      "    user: tester",
      "current-context: fake",
      "",
    ].join("\n"),
  );
  return path;
}

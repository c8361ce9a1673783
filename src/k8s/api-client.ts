// Raw JSON requests to the API server. The client library supplies what is hard to get right
// (kubeconfig auth: tokens, client certs, exec plugins, rotating service-account tokens, and the
// TLS dispatcher); we keep the bytes, so objects reach kube-proxy as plain API JSON, statuses
// (410 Expired, 403) stay visible, and a watch stream is ours to pace and abort.

import {
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  type KubeConfig,
  RequestContext,
  type ResponseContext,
} from "@kubernetes/client-node";
import { type RateLimiter, unlimited } from "../util/token-bucket.ts";
import { versionInfo } from "../version.ts";

export interface ApiRequest {
  method: "GET" | "POST";
  /** Absolute API path, e.g. /api/v1/services. */
  path: string;
  query?: Readonly<Record<string, string | undefined>>;
  /** Sent as JSON. */
  body?: unknown;
  signal?: AbortSignal;
  /**
   * The caller reads the body as it arrives, through stream() (a list read item by item), as
   * it does a watch's; otherwise the body is read whole before the response is handed over.
   */
  streamBody?: boolean;
}

export interface ApiResponse {
  status: number;
  text(): Promise<string>;
  /** The body as a byte stream (watches); null when there is none. */
  stream(): ReadableStream<Uint8Array> | null;
}

export interface ApiClient {
  /** Resolves with any HTTP status; rejects only when no response arrived (network, abort). */
  request(req: ApiRequest): Promise<ApiResponse>;
}

/**
 * Told about every request the client makes, for upstream's rest_client_* metrics (client-go's
 * tools/metrics hooks). `host` is the API server URL's host[:port], as client-go labels it.
 */
export interface ApiRequestObserver {
  /** One attempt's outcome: the HTTP status, or undefined when no response arrived. */
  result(status: number | undefined, method: string, host: string): void;
  /** A non-watch request's latency: from before rate limiting until its body was read. */
  latency(verb: string, host: string, seconds: number): void;
}

/** A failed API call, with the HTTP status and the Status reason when the server sent one. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly reason?: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** Builds an ApiError from a non-2xx response, using the server's Status message if any. */
export async function apiErrorFrom(res: ApiResponse, what: string): Promise<ApiError> {
  let message = `HTTP ${res.status}`;
  let reason: string | undefined;
  try {
    const s = JSON.parse(await res.text()) as { message?: string; reason?: string };
    if (s.message) message = s.message;
    reason = s.reason;
  } catch {
    // Not a Status object (a proxy's HTML page, an empty body): the code is all we know.
  }
  return new ApiError(`${what}: ${message}`, res.status, reason);
}

/** Readable text for a thrown value, including undici's nested network cause. */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
}

/** host[:port] of a server URL as Go's url.URL.Host has it (an explicit default port is kept). */
export function serverHost(server: string): string {
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(server)?.[1];
  return authority === undefined ? "none" : authority.slice(authority.lastIndexOf("@") + 1);
}

export function kubeApiClient(
  kc: KubeConfig,
  limiter: RateLimiter = unlimited,
  observer?: ApiRequestObserver,
): ApiClient {
  const http = new IsomorphicFetchHttpLibrary();
  const userAgent = `kube-proxy-ts/${versionInfo().version}`;
  return {
    async request(req) {
      const start = performance.now();
      const cluster = kc.getCurrentCluster();
      const host = cluster ? serverHost(cluster.server) : "none";
      // Watches stream for minutes; like client-go, only other requests report a latency.
      const watch = req.query?.watch === "true";
      try {
        await limiter.take(req.signal);
        if (req.signal?.aborted) throw new ApiError("request aborted");
        if (!cluster) throw new ApiError("kubeconfig has no current cluster");
        const url = new URL(cluster.server.replace(/\/+$/, "") + req.path);
        for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
        const ctx = new RequestContext(
          url.toString(),
          req.method === "GET" ? HttpMethod.GET : HttpMethod.POST,
        );
        await kc.applySecurityAuthentication(ctx);
        ctx.setHeaderParam("Accept", "application/json");
        ctx.setHeaderParam("User-Agent", userAgent);
        if (req.body !== undefined) {
          ctx.setHeaderParam("Content-Type", "application/json");
          ctx.setBody(JSON.stringify(req.body));
        }
        if (req.signal) ctx.setSignal(req.signal);
        let res: ResponseContext;
        try {
          res = await http.send(ctx).toPromise();
        } catch (err) {
          observer?.result(undefined, req.method, host);
          throw err;
        }
        observer?.result(res.httpStatusCode, req.method, host);
        const status = res.httpStatusCode;
        // A streamed list's latency ends with its headers: its body is read by the caller.
        if (watch || req.streamBody)
          return { status, text: () => res.body.text(), stream: () => res.body.stream() };
        // Everything else is read whole here, as client-go's Do() does, so the latency covers it.
        const body = await res.body.text();
        return { status, text: async () => body, stream: () => new Response(body).body };
      } finally {
        if (!watch) observer?.latency(req.method, host, (performance.now() - start) / 1000);
      }
    },
  };
}

// Raw JSON requests to the API server. The client library supplies what is hard to get right
// (kubeconfig auth: tokens, client certs, exec plugins, rotating service-account tokens, and the
// TLS dispatcher); we keep the bytes, so objects reach kube-proxy as plain API JSON, statuses
// (410 Expired, 403) stay visible, and a watch stream is ours to pace and abort.

import {
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  type KubeConfig,
  RequestContext,
} from "@kubernetes/client-node";
import { versionInfo } from "../version.ts";
import { type RateLimiter, unlimited } from "./rate-limiter.ts";

export interface ApiRequest {
  method: "GET" | "POST";
  /** Absolute API path, e.g. /api/v1/services. */
  path: string;
  query?: Readonly<Record<string, string | undefined>>;
  /** Sent as JSON. */
  body?: unknown;
  signal?: AbortSignal;
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

export function kubeApiClient(kc: KubeConfig, limiter: RateLimiter = unlimited): ApiClient {
  const http = new IsomorphicFetchHttpLibrary();
  const userAgent = `kube-proxy-ts/${versionInfo().version}`;
  return {
    async request(req) {
      await limiter.take(req.signal);
      if (req.signal?.aborted) throw new ApiError("request aborted");
      const cluster = kc.getCurrentCluster();
      if (!cluster) throw new ApiError("kubeconfig has no current cluster");
      const url = new URL(cluster.server.replace(/\/+$/, "") + req.path);
      for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
      const ctx = new RequestContext(url.toString(), req.method === "GET" ? HttpMethod.GET : HttpMethod.POST);
      await kc.applySecurityAuthentication(ctx);
      ctx.setHeaderParam("Accept", "application/json");
      ctx.setHeaderParam("User-Agent", userAgent);
      if (req.body !== undefined) {
        ctx.setHeaderParam("Content-Type", "application/json");
        ctx.setBody(JSON.stringify(req.body));
      }
      if (req.signal) ctx.setSignal(req.signal);
      const res = await http.send(ctx).toPromise();
      return { status: res.httpStatusCode, text: () => res.body.text(), stream: () => res.body.stream() };
    },
  };
}

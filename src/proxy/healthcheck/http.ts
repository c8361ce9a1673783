// Listening and answering the way upstream's Go servers do, so probes see the same sockets,
// status codes and headers: an unspecified host listens on every address of both families,
// bind failures read like Go's ("listen tcp 0.0.0.0:10256: bind: address already in use"),
// and unknown paths get net/http's "404 page not found".

import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { ipFamily } from "../../config/net.ts";
import { errText } from "../../util/err-text.ts";
import { joinHostPort, splitHostPort } from "../../util/net/host-port.ts";

/** A server could not listen; main decides (per bindAddressHardFail) whether that is fatal. */
export class BindError extends Error {
  override readonly name = "BindError";
  constructor(
    /** The "ip:port" that was asked for. */
    readonly address: string,
    /** The errno code ("EADDRINUSE"), when the failure came from the socket layer. */
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

const GO_BIND_REASONS: Readonly<Record<string, string>> = {
  EADDRINUSE: "bind: address already in use",
  EADDRNOTAVAIL: "bind: cannot assign requested address",
  EACCES: "bind: permission denied",
  EAFNOSUPPORT: "socket: address family not supported by protocol",
};

function errnoCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** "listen tcp ADDR: REASON", Go's wording, independent of the runtime's own messages. */
export function describeListenError(address: string, err: unknown): string {
  const code = errnoCode(err);
  const reason = (code && GO_BIND_REASONS[code]) ?? errText(err);
  return `listen tcp ${address}: ${reason}`;
}

export interface HostPort {
  host: string;
  port: number;
}

/** Splits "ip:port" / "[ip]:port"; port 0 (any free port) is allowed for tests. */
export function parseBindAddress(address: string): HostPort | string {
  const split = splitHostPort(address);
  if (!split.ok) return `address ${address}: ${split.error}`;
  if (!/^\d+$/.test(split.port) || Number(split.port) > 65535) return `address ${address}: invalid port`;
  if (split.host !== "" && ipFamily(split.host) === undefined)
    return `address ${address}: host must be an IP`;
  return { host: split.host, port: Number(split.port) };
}

function isUnspecified(host: string): boolean {
  return host === "" || host === "0.0.0.0" || host === "::";
}

function listenOnce(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once("error", onError);
    server.listen({ host, port, ipv6Only: false }, () => {
      server.off("error", onError);
      resolve();
    });
  });
}

/**
 * Listens like Go's net.Listen("tcp", addr): an unspecified host ("", 0.0.0.0, ::) takes every
 * local address of both families through one dual-stack socket, falling back to IPv4 only when
 * the host has no IPv6. Rejects with the raw socket error.
 */
export async function listenGo(server: Server, target: HostPort): Promise<void> {
  if (!isUnspecified(target.host)) return listenOnce(server, target.host, target.port);
  try {
    await listenOnce(server, "::", target.port);
  } catch (err) {
    const code = errnoCode(err);
    if (code !== "EAFNOSUPPORT" && code !== "EADDRNOTAVAIL") throw err;
    await listenOnce(server, "0.0.0.0", target.port);
  }
}

/** The "ip:port" a listening server actually holds (the real port when 0 was asked for). */
export function boundAddress(server: Server): string {
  const info = server.address() as AddressInfo | null;
  return info ? joinHostPort(info.address, info.port) : "";
}

/** Stops listening and drops open connections at once, as Go's http.Server.Close does. */
export function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export type Handler = (req: IncomingMessage, res: ServerResponse, path: string) => void | Promise<void>;

/** An HTTP server whose handler failures answer 500 instead of escaping into the process. */
export function createGoStyleServer(handler: Handler): Server {
  return createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    Promise.resolve()
      .then(() => handler(req, res, path))
      .catch((err: unknown) => {
        const message = errText(err);
        if (!res.headersSent) reply(res, 500, "text/plain; charset=utf-8", `${message}\n`);
        else res.destroy();
      });
  });
}

/** Writes a complete response with upstream's nosniff header. */
export function reply(
  res: ServerResponse,
  status: number,
  contentType: string,
  body: string,
  headers: Readonly<Record<string, string>> = {},
): void {
  res.statusCode = status;
  res.setHeader("Content-Type", contentType);
  res.setHeader("X-Content-Type-Options", "nosniff");
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.end(body);
}

/** net/http's NotFound: what both upstream muxes answer for paths they do not know. */
export function notFound(res: ServerResponse): void {
  reply(res, 404, "text/plain; charset=utf-8", "404 page not found\n");
}

/**
 * Creates a server, binds it to `address` and returns it listening; a bind failure closes
 * the server and throws BindError with `what` (e.g. "failed to start proxier healthz on ADDR")
 * followed by Go's wording of the cause.
 */
export async function serveOn(address: string, what: string, handler: Handler): Promise<Server> {
  const target = parseBindAddress(address);
  if (typeof target === "string") throw new BindError(address, undefined, `${what}: ${target}`);
  const server = createGoStyleServer(handler);
  try {
    await listenGo(server, target);
  } catch (err) {
    await closeServer(server);
    throw new BindError(address, errnoCode(err), `${what}: ${describeListenError(address, err)}`);
  }
  return server;
}

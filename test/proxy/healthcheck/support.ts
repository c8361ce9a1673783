// Shared helpers for the health check tests: bounded requests and free ports on loopback.

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** fetch with a deadline, so a stuck server fails the test instead of hanging it. */
export function get(url: string): Promise<Response> {
  return fetch(url, { signal: AbortSignal.timeout(3000) });
}

/** Whether something accepts connections at url (a refused connection is "no"). */
export async function reachable(url: string): Promise<boolean> {
  try {
    await get(url);
    return true;
  } catch {
    return false;
  }
}

/** Holds a loopback port open; close() frees it. */
export async function occupy(port = 0): Promise<{ port: number; server: Server; close(): Promise<void> }> {
  const server = createServer((_req, res) => res.end("someone else"));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A loopback port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const held = await occupy();
  await held.close();
  return held.port;
}

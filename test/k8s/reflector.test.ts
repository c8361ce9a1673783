// The reflector against a scripted client: the cases a real API server rarely produces on
// demand (a watch that closes at once, an unknown event type).

import { describe, expect, test } from "bun:test";
import type { ApiClient, ApiRequest, ApiResponse } from "../../src/k8s/api-client.ts";
import { Reflector } from "../../src/k8s/reflector.ts";
import { memoryLogger } from "../../src/log/logger.ts";
import { waitFor } from "../support/wait.ts";

interface Obj {
  metadata: { name: string; resourceVersion: string };
}

function response(status: number, body: string): ApiResponse {
  return {
    status,
    text: async () => body,
    stream: () => new Response(body).body,
  };
}

function scripted(watchBody: (n: number) => string): ApiClient & { sent: ApiRequest[] } {
  const sent: ApiRequest[] = [];
  let watches = 0;
  return {
    sent,
    async request(req) {
      sent.push(req);
      if (req.query?.watch) return response(200, watchBody(watches++));
      return response(
        200,
        JSON.stringify({
          metadata: { resourceVersion: "10" },
          items: [{ metadata: { name: "a", resourceVersion: "10" } }],
        }),
      );
    },
  };
}

function reflector(client: ApiClient, calls: string[]) {
  return new Reflector<Obj>(
    {
      kind: "Thing",
      apiVersion: "v1",
      path: "/things",
      client,
      logger: memoryLogger(),
      backoff: { initialMs: 50, maxMs: 100, jitter: 0 },
    },
    {
      added: (o) => calls.push(`+${o.metadata.name}`),
      updated: (_p, o) => calls.push(`~${o.metadata.name}`),
      deleted: (o) => calls.push(`-${o.metadata.name}`),
      synced: () => calls.push("synced"),
    },
  );
}

describe("Reflector", () => {
  test("a watch that closes at once, again and again, is retried with backoff, not in a hot loop", async () => {
    const client = scripted(() => "");
    const calls: string[] = [];
    const r = reflector(client, calls);
    const watches = () => client.sent.filter((q) => q.query?.watch).length;
    const started = Date.now();
    await r.start();
    await waitFor(() => watches() >= 4, 10_000, "four watches");
    await r.stop();
    // Each retry waits at least the 50 ms initial backoff, however fast or slow the machine is;
    // a hot loop would retry thousands of times in that span.
    const elapsedMs = Date.now() - started;
    expect(watches()).toBeLessThanOrEqual(1 + Math.floor(elapsedMs / 50));
    expect(calls).toEqual(["+a", "synced"]);
  });

  test("an unknown event type fails the watch; it resumes from the last resourceVersion without a relist", async () => {
    const client = scripted((n) =>
      n === 0
        ? `${JSON.stringify({ type: "ADDED", object: { metadata: { name: "b", resourceVersion: "11" } } })}\n{"type":"WEIRD","object":{}}\n`
        : "",
    );
    const calls: string[] = [];
    const r = reflector(client, calls);
    await r.start();
    await waitFor(() => client.sent.filter((q) => q.query?.watch).length >= 2, 3000, "second watch");
    await r.stop();
    const watches = client.sent.filter((q) => q.query?.watch);
    expect(watches[0]!.query?.resourceVersion).toBe("10");
    expect(watches[1]!.query?.resourceVersion).toBe("11");
    expect(client.sent.filter((q) => !q.query?.watch)).toHaveLength(1);
    expect(calls).toEqual(["+a", "synced", "+b"]);
  });

  test("watch requests ask for bookmarks and a server-side timeout of 5 to 10 minutes", async () => {
    const client = scripted(() => "");
    const r = reflector(client, []);
    await r.start();
    await waitFor(() => client.sent.some((q) => q.query?.watch), 3000, "a watch");
    await r.stop();
    const w = client.sent.find((q) => q.query?.watch)!;
    expect(w.query?.allowWatchBookmarks).toBe("true");
    const t = Number(w.query?.timeoutSeconds);
    expect(t).toBeGreaterThanOrEqual(300);
    expect(t).toBeLessThan(600);
  });
});

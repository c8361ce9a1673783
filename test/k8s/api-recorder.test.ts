import { describe, expect, test } from "bun:test";
import type { ApiClient, ApiRequest } from "../../src/k8s/api-client.ts";
import { createApiRecorder, eventBody, microTime } from "../../src/k8s/api-recorder.ts";
import { memoryLogger } from "../../src/log/logger.ts";

const at = new Date("2024-05-01T12:34:56.789Z");

function fakeClient(status: number, delayMs = 0): ApiClient & { sent: ApiRequest[] } {
  const sent: ApiRequest[] = [];
  return {
    sent,
    async request(req) {
      sent.push(req);
      await new Promise((r) => setTimeout(r, delayMs));
      return { status, text: async () => "{}", stream: () => null };
    },
  };
}

describe("eventBody", () => {
  test("a Service warning: namespaced, regarding the Service, named after it", () => {
    const body = eventBody(
      {
        ref: { kind: "Service", namespace: "shop", name: "web", uid: "u-1" },
        type: "Warning",
        reason: "InvalidExternalIP",
        action: "Sync",
        message: "skipping bad IP",
      },
      "kube-proxy-n1",
      at,
    );
    expect(body).toMatchObject({
      apiVersion: "events.k8s.io/v1",
      metadata: { namespace: "shop", name: `web.${(BigInt(at.getTime()) * 1_000_000n).toString(16)}` },
      eventTime: "2024-05-01T12:34:56.789000Z",
      reportingController: "kube-proxy",
      reportingInstance: "kube-proxy-n1",
      type: "Warning",
      regarding: { kind: "Service", apiVersion: "v1", namespace: "shop", name: "web", uid: "u-1" },
    });
  });

  test("an event about an object with an invalid name gets a valid name of its own", () => {
    const body = eventBody(
      {
        ref: { kind: "Service", namespace: "shop", name: "b/c" },
        type: "Warning",
        reason: "KubeProxyInvalidField",
        action: "ParseService",
        message: "metadata.name invalid",
      },
      "kube-proxy-n1",
      at,
    );
    const suffix = (BigInt(at.getTime()) * 1_000_000n).toString(16);
    expect(body).toMatchObject({
      metadata: { namespace: "shop", name: `kube-proxy.${suffix}` },
      regarding: { kind: "Service", namespace: "shop", name: "b/c" },
    });
  });

  test("notes longer than 1024 bytes are cut", () => {
    const body = eventBody(
      {
        ref: { kind: "Node", name: "n" },
        type: "Normal",
        reason: "R",
        action: "A",
        message: "é".repeat(800),
      },
      "i",
      at,
    );
    expect(Buffer.byteLength(body.note as string)).toBeLessThanOrEqual(1024);
    expect((body.note as string).endsWith("é")).toBe(true);
    expect((body.metadata as { namespace: string }).namespace).toBe("default");
  });

  test("microTime has six fractional digits", () => {
    expect(microTime(new Date("2024-01-02T03:04:05.006Z"))).toBe("2024-01-02T03:04:05.006000Z");
  });
});

describe("createApiRecorder", () => {
  test("posts to the events.k8s.io API of the object's namespace", async () => {
    const client = fakeClient(201);
    const rec = createApiRecorder({ client, nodeName: "n1", logger: memoryLogger() });
    rec.record({
      ref: { kind: "Service", namespace: "a", name: "s" },
      type: "Warning",
      reason: "R",
      action: "X",
      message: "m",
    });
    await rec.flush();
    expect(client.sent.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /apis/events.k8s.io/v1/namespaces/a/events",
    ]);
  });

  test("in-flight events are bounded; the excess is dropped with a v(2) log line", async () => {
    const client = fakeClient(201, 50);
    const log = memoryLogger({ verbosity: 2 });
    const rec = createApiRecorder({ client, nodeName: "n1", logger: log, maxPending: 2 });
    for (let i = 0; i < 5; i++) {
      rec.record({
        ref: { kind: "Node", name: "n1" },
        type: "Normal",
        reason: `R${i}`,
        action: "A",
        message: "",
      });
    }
    await rec.flush();
    expect(client.sent).toHaveLength(2);
    expect(log.lines.filter((l) => l.includes("Dropping event"))).toHaveLength(3);
  });

  test("a server error is logged only at v(2)", async () => {
    const quiet = memoryLogger({ verbosity: 1 });
    const rec = createApiRecorder({ client: fakeClient(500), nodeName: "n1", logger: quiet });
    expect(await rec.postBirthCry("n1")).toBe(false);
    expect(quiet.lines).toEqual([]);
  });
});

// /statusz and /flagz as upstream 1.37 serves them: the text pages (random delimiter, fixed
// header and warning), the structured config.k8s.io objects behind the full media type, the 406
// for anything else, and /flagz's text fixed at its first render.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  Flagz,
  listedPaths,
  negotiate,
  statuszResponse,
  unixDate,
  uptimeText,
} from "../../../src/proxy/healthcheck/zpages.ts";

const START = Date.UTC(2026, 6, 23, 14, 47, 51, 400);
const STATUS = {
  startTimeMs: START,
  nowMs: START + 303_000,
  runtime: "bun 1.4.5",
  binaryVersion: "v0.2.0",
  emulationVersion: "1.37",
  paths: ["/healthz", "/metrics/slis", "/proxyMode", "/metrics", "/configz", "/flagz"],
};
const WARNING =
  "Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.";

describe("/statusz", () => {
  test("text (no Accept): header, warning, then the fields with the delimiter chosen per request", () => {
    const r = statuszResponse(undefined, STATUS, () => 0);
    expect(r.status).toBe(200);
    expect(r.headers["Content-Type"]).toBe("text/plain; charset=utf-8");
    expect(r.body).toBe(
      [
        "",
        "kube-proxy statusz",
        WARNING,
        "",
        "Started: Thu Jul 23 14:47:51 UTC 2026",
        "Up: 0 hr 05 min 03 sec",
        "Go version: bun 1.4.5",
        "Binary version: v0.2.0",
        "Emulation version: 1.37",
        "Paths: /configz /flagz /healthz /metrics /proxyMode",
        "",
      ].join("\n"),
    );
    expect(statuszResponse("*/*", STATUS, () => 0.5).body).toContain("Started= Thu Jul 23");
    expect(statuszResponse("text/plain", STATUS, () => 0.99).body).toContain("Started  Thu Jul 23");
  });

  test("JSON and YAML v1beta1 behind the full media type; v1alpha1 with a deprecation warning", () => {
    const json = statuszResponse("application/json;as=Statusz;g=config.k8s.io;v=v1beta1", STATUS);
    expect(json.headers["Content-Type"]).toBe("application/json;g=config.k8s.io;v=v1beta1;as=Statusz");
    expect(JSON.parse(json.body)).toEqual({
      kind: "Statusz",
      apiVersion: "config.k8s.io/v1beta1",
      metadata: { name: "kube-proxy" },
      startTime: "2026-07-23T14:47:51Z",
      uptimeSeconds: 303,
      goVersion: "bun 1.4.5",
      binaryVersion: "v0.2.0",
      emulationVersion: "1.37",
      paths: ["/configz", "/flagz", "/healthz", "/metrics", "/proxyMode"],
    });
    const yaml = statuszResponse("application/yaml;v=v1alpha1;g=config.k8s.io;as=Statusz", STATUS);
    expect(yaml.body).toContain("apiVersion: config.k8s.io/v1alpha1\n");
    expect(yaml.headers.Warning).toBe(
      '299 - "This version of the statusz endpoint is deprecated. Please use a newer version."',
    );
  });

  test.each([
    "application/xml",
    "application/json",
    "application/json;v=v1beta1;g=config.k8s.io",
    "application/json;as=Flagz;g=config.k8s.io;v=v1beta1",
    "text/plain;v=v1beta1",
  ])("406 with a Status naming what is accepted: %s", (accept) => {
    const r = statuszResponse(accept, STATUS);
    expect(r.status).toBe(406);
    expect(JSON.parse(r.body)).toMatchObject({
      kind: "Status",
      reason: "NotAcceptable",
      code: 406,
      message: "only the following media types are accepted: application/json, application/yaml, text/plain",
    });
  });

  test("a wildcard after an unusable clause still gets text", () => {
    expect(negotiate("application/json;v=foo;g=config.k8s.io;as=Statusz,*/*", "Statusz")).toEqual({
      kind: "text",
    });
  });

  test("property: any Accept header gives text, a structured object or a 406, never a throw", () => {
    fc.assert(
      fc.property(fc.string(), (accept) => {
        const r = statuszResponse(accept, STATUS);
        expect([200, 406]).toContain(r.status);
      }),
    );
  });

  test("helpers: Go's UnixDate, the uptime text, the first-segment path list", () => {
    expect(unixDate(Date.UTC(2026, 0, 5, 3, 4, 5))).toBe("Mon Jan  5 03:04:05 UTC 2026");
    expect(uptimeText(3 * 3600 + 7 * 60 + 9)).toBe("3 hr 07 min 09 sec");
    expect(listedPaths(["/metrics/slis", "/metrics", "/healthz/ping", "/b", "/a"])).toEqual([
      "/a",
      "/b",
      "/healthz",
      "/metrics",
    ]);
  });
});

describe("/flagz", () => {
  const flags = { v: "2", "bind-address": "0.0.0.0", "feature-gates": "A=true,B=false", "cluster-cidr": "" };

  test("text: sorted name<delimiter>value lines after the warning, no space after the delimiter", () => {
    expect(new Flagz(flags, () => 0.5).response(undefined).body).toBe(
      `\nkube-proxy flagz\n${WARNING}\nbind-address=0.0.0.0\ncluster-cidr=\nfeature-gates=A=true,B=false\nv=2\n`,
    );
  });

  test("the first text render is kept for the life of the process", () => {
    let n = 0;
    const flagz = new Flagz(flags, () => [0, 0.5, 0.99][n++ % 3] ?? 0);
    const first = flagz.response("text/plain").body;
    expect(flagz.response(undefined).body).toBe(first);
  });

  test("JSON v1beta1: the flags as a map", () => {
    const r = new Flagz(flags).response("application/json;as=Flagz;g=config.k8s.io;v=v1beta1");
    expect(JSON.parse(r.body)).toEqual({
      kind: "Flagz",
      apiVersion: "config.k8s.io/v1beta1",
      metadata: { name: "kube-proxy" },
      flags: { "bind-address": "0.0.0.0", "cluster-cidr": "", "feature-gates": "A=true,B=false", v: "2" },
    });
    expect(new Flagz(flags).response("application/json;as=Statusz;g=config.k8s.io;v=v1beta1").status).toBe(
      406,
    );
  });
});

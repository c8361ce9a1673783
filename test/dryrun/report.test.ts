import { describe, expect, test } from "bun:test";
import {
  type DryRunReport,
  dryRunExitCode,
  renderJson,
  renderJsonParts,
  renderText,
  shellQuote,
} from "../../src/dryrun/report.ts";
import type { ListedServicePort } from "../../src/dryrun/service-listing.ts";
import { ServiceListing } from "../../src/dryrun/service-listing.ts";
import { DryRunRecorder } from "../../src/exec/dry-run.ts";
import type { ViewedReal, VirtualServerView } from "../../src/modes/ipvs/proxier.ts";
import type { EndpointInfo, ServicePortInfo } from "../../src/proxy/types.ts";
import { Listing } from "../../src/util/listing.ts";

const base: DryRunReport = {
  mode: "ipvs",
  checks: [
    { name: "ipvs kernel modules", ok: false, detail: "missing required kernel modules: ip_vs, ip_vs_rr" },
    { name: "ipset version", ok: true, detail: "ipset 7.17" },
  ],
  commands: [
    { argv: ["sysctl", "-w", "net.ipv4.ip_forward=1"] },
    { argv: ["ipset", "restore", "-exist"], stdin: "create KUBE-CLUSTER-IP hash:ip,port\n" },
  ],
  ipvs: {
    virtualServers: [
      {
        address: "198.51.100.10",
        port: 80,
        protocol: "TCP",
        scheduler: "rr",
        flags: [],
        timeout: 0,
        realServers: [{ address: "203.0.113.11", port: 8080, weight: 1 }],
      },
    ],
  },
  services: [
    {
      name: "default/web:http",
      type: "ClusterIP",
      protocol: "TCP",
      port: 80,
      clusterIPs: ["198.51.100.10"],
      sessionAffinity: { timeoutSeconds: 10800 },
      externalTrafficPolicy: "Cluster",
      internalTrafficPolicy: "Cluster",
      endpoints: [
        {
          endpoint: "203.0.113.11:8080",
          node: "node-a",
          local: true,
          ready: true,
          serving: true,
          terminating: false,
        },
      ],
    },
    {
      name: "default/pending:grpc",
      type: "ClusterIP",
      protocol: "TCP",
      port: 9000,
      clusterIPs: ["198.51.100.50"],
      externalTrafficPolicy: "Cluster",
      internalTrafficPolicy: "Cluster",
      endpoints: [],
    },
  ],
  notes: ["cluster state: embedded example"],
};

describe("dry-run report", () => {
  test("exit code is 3 when any check fails, 0 when all pass", () => {
    expect(dryRunExitCode(base)).toBe(3);
    expect(dryRunExitCode({ ...base, checks: base.checks.map((c) => ({ ...c, ok: true })) })).toBe(0);
  });

  test("JSON follows the DESIGN.md contract", () => {
    const parsed = JSON.parse(renderJson(base));
    expect(parsed.mode).toBe("ipvs");
    expect(parsed.checks).toEqual(base.checks);
    expect(parsed.commands[0]).toEqual({ argv: ["sysctl", "-w", "net.ipv4.ip_forward=1"] });
    expect(parsed.commands[1].stdin).toBe("create KUBE-CLUSTER-IP hash:ip,port\n");
    expect(parsed.ipvs.virtualServers[0].realServers[0].port).toBe(8080);
    expect(parsed.services.map((s: { name: string }) => s.name)).toEqual([
      "default/web:http",
      "default/pending:grpc",
    ]);
  });

  test("the JSON pieces join to exactly JSON.stringify(report, null, 2), tricky stdin included", () => {
    const tricky = {
      ...base,
      commands: [
        ...base.commands,
        {
          argv: ["iptables-restore"],
          stdin: '*nat\n-A X -m comment --comment "a \\"q\\" \u0000stdin-x-0" -j Y\nCOMMIT\n',
        },
        { argv: ["iptables-restore"], stdin: "" },
      ],
      notes: ["\u0000stdin-0", '"\\u0000stdin-'],
    };
    for (const report of [base, tricky]) {
      const { mode, checks, commands, services, ipvs, notes } = report;
      const plain = `${JSON.stringify({ mode, checks, commands, services, ipvs, notes }, null, 2)}\n`;
      expect([...renderJsonParts(report)].join("")).toBe(plain);
      expect(renderJson(report)).toBe(plain);
    }
    // A restore input of several megabytes, non-ASCII included, escapes the same in pieces.
    const big = Array.from(
      { length: 60_000 },
      (_, i) => `-A KUBE-SEP-${i} -m comment --comment "ns/é\\${i}" -j DNAT`,
    ).join("\n");
    const large = { ...base, commands: [{ argv: ["iptables-restore"], stdin: big }] };
    expect(big.length).toBeGreaterThan(3 << 20);
    expect(renderJson(large)).toBe(
      `${JSON.stringify({ mode: "ipvs", checks: base.checks, commands: large.commands, services: base.services, ipvs: base.ipvs, notes: base.notes }, null, 2)}\n`,
    );
  });

  test("virtual servers as Listings (long real server lists included) print as the arrays they list", () => {
    const reals = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ address: `10.0.${i >> 8}.${i & 255}`, port: 8080, weight: 1 }));
    const first = [...base.ipvs!.virtualServers][0]!;
    const views = [300, 2, 0].map((n, i) => ({ ...first, port: 80 + i, realServers: reals(n) }));
    const listed = (items: readonly unknown[]) => new Listing(items.length, () => items[Symbol.iterator]());
    const asListing = views.map((v) => ({ ...v, realServers: listed(v.realServers) as Listing<ViewedReal> }));
    const report = { ...base, ipvs: { virtualServers: listed(asListing) as Listing<VirtualServerView> } };
    expect(renderJson(report)).toBe(renderJson({ ...base, ipvs: { virtualServers: views } }));
    expect(JSON.parse(renderJson(report)).ipvs.virtualServers[0].realServers).toHaveLength(300);
  });

  test("stdin recorded in pieces prints as its text would, a surrogate pair cut between pieces included", async () => {
    const dry = new DryRunRecorder({ run: async () => ({ code: 0, stdout: "", stderr: "" }) });
    const emoji = "\u{1f600}"; // one surrogate pair
    const line = (i: number) => `-A KUBE-SEP-${i} -m comment --comment "ns/\u00e9\\${i} ${emoji}" -j DNAT\n`;
    const big = Array.from({ length: 40_000 }, (_, i) => line(i)).join("");
    const pieces = ["*nat\n", `x${emoji[0]}`, `${emoji[1]}y\n`, big, "\n", "lone \ud800", "\u0000 end\n"];
    await dry.run({ cmd: "iptables-restore", args: ["--noflush"], stdin: pieces });
    const report: DryRunReport = { ...base, commands: [...base.commands, ...dry.commands] };
    const text = pieces.join("");
    const plain = `${JSON.stringify(
      {
        mode: report.mode,
        checks: report.checks,
        commands: [...base.commands, { argv: ["iptables-restore", "--noflush"], stdin: text }],
        services: report.services,
        ipvs: report.ipvs,
        notes: report.notes,
      },
      null,
      2,
    )}\n`;
    expect(renderJson(report)).toBe(plain);
  });

  test("the JSON is the same for values JSON.stringify treats specially, events and empty arrays", () => {
    const odd = {
      ...base,
      checks: [],
      services: [
        {
          ...(base.services as readonly ListedServicePort[])[0]!,
          extra: undefined,
          list: [undefined, () => 1, { a: [] }, {}],
        },
      ],
      notes: [],
      events: [{ type: "Warning", reason: "R", action: "A", message: 'm "q"\n', regarding: "Node/n" }],
    } as unknown as DryRunReport;
    const { mode, checks, commands, services, ipvs, notes, events } = odd;
    const plain = `${JSON.stringify({ mode, checks, commands, services, ipvs, notes, events }, null, 2)}\n`;
    expect(renderJson(odd)).toBe(plain);
  });

  test("the pieces are made as they are taken: none is the whole report", () => {
    const many = {
      ...base,
      services: Array.from({ length: 5000 }, (_, i) => ({
        ...(base.services as readonly ListedServicePort[])[0]!,
        name: `ns/svc${i}:http`,
      })),
    };
    const parts = [...renderJsonParts(many)];
    const whole = parts.join("");
    expect(whole).toBe(renderJson(many));
    expect(parts.length).toBeGreaterThan(5);
    expect(Math.max(...parts.map((p) => p.length))).toBeLessThan(whole.length / 4);
  });

  test("a ServiceListing (made as it is read) prints as the array of what it lists, in id order", () => {
    const port = (id: string) =>
      ({
        id,
        serviceType: "ClusterIP",
        protocol: "TCP",
        port: 80,
        clusterIPs: { IPv4: "198.51.100.10" },
        externalIPs: [],
        loadBalancerVIPs: [],
        loadBalancerSourceRanges: [],
        sessionAffinity: { type: "None", timeoutSeconds: 0 },
        nodePort: 0,
        healthCheckNodePort: 0,
        externalPolicyLocal: false,
        internalPolicyLocal: false,
      }) as unknown as ServicePortInfo;
    const eps = new Map([
      [
        "ns/b:http",
        [
          {
            endpoint: "203.0.113.1:8080",
            nodeName: "n",
            isLocal: false,
            ready: true,
            serving: true,
            terminating: false,
          },
        ],
      ],
    ]) as unknown as Map<string, EndpointInfo[]>;
    const listing = new ServiceListing([port("ns/b:http"), port("ns/a:http")], (id) => eps.get(id));
    expect(listing.length).toBe(2);
    const listed = [...listing];
    expect(listed.map((p) => p.name)).toEqual(["ns/a:http", "ns/b:http"]);
    const lazy = { ...base, services: listing };
    const eager = { ...base, services: listed };
    expect(renderJson(lazy)).toBe(renderJson(eager));
    expect(renderJson(lazy)).toBe(
      `${JSON.stringify({ mode: base.mode, checks: base.checks, commands: base.commands, services: listed, ipvs: base.ipvs, notes: base.notes }, null, 2)}\n`,
    );
    expect(renderText(lazy)).toBe(renderText(eager));
    const empty = { ...base, services: new ServiceListing([], () => undefined) };
    expect(renderJson(empty)).toBe(renderJson({ ...base, services: [] }));
  });

  test("text shows failed checks, commands with heredoc stdin, and the verdict", () => {
    const text = renderText(base);
    expect(text).toContain("[FAIL] ipvs kernel modules: missing required kernel modules: ip_vs, ip_vs_rr");
    expect(text).toContain("[ OK ] ipset version");
    expect(text).toContain("ipset restore -exist <<'EOF'\ncreate KUBE-CLUSTER-IP hash:ip,port\nEOF");
    expect(text).toContain("TCP 198.51.100.10:80 rr");
    expect(text).toContain("exit 3");
    expect(text).toContain("default/web:http ClusterIP TCP 198.51.100.10:80 (affinity ClientIP 10800s)");
    expect(text).toContain("-> 203.0.113.11:8080 on node-a (local) ready");
    expect(text).toContain(
      "default/pending:grpc ClusterIP TCP 198.51.100.50:9000\n    (no endpoints: traffic is rejected)",
    );
  });

  test("shell quoting", () => {
    expect(shellQuote("net.ipv4.ip_forward=1")).toBe("net.ipv4.ip_forward=1");
    expect(shellQuote("a b")).toBe("'a b'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
  });
});

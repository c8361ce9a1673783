import { describe, expect, test } from "bun:test";
import { FakeExec, fail, ok } from "../../../src/exec/testing/fake.ts";
import { attributeRestoreFailures, createIpvsClient } from "../../../src/host/ipvs/client.ts";
import { IPVS_UNAVAILABLE_MESSAGE, IpvsError } from "../../../src/host/ipvs/errors.ts";
import { FakeIpvs } from "../../../src/host/ipvs/testing/fake.ts";
import type { IpvsChange, VirtualServer, VirtualServerKey } from "../../../src/host/ipvs/types.ts";

const web: VirtualServerKey = { address: "10.96.143.7", port: 80, protocol: "TCP" };
const dns: VirtualServerKey = { address: "fd00:10:96::a", port: 53, protocol: "UDP" };
const server = (key: VirtualServerKey, extra: Partial<VirtualServer> = {}): VirtualServer => ({
  ...key,
  scheduler: "rr",
  flags: [],
  timeout: 0,
  ...extra,
});

function setup(opts: ConstructorParameters<typeof FakeIpvs>[0] = {}) {
  const fake = new FakeIpvs(opts);
  const exec = fake.install();
  return { fake, exec, client: createIpvsClient({ exec }) };
}

async function thrown(p: Promise<unknown>): Promise<IpvsError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof IpvsError) return err;
    throw err;
  }
  throw new Error("expected an IpvsError");
}

const initial: IpvsChange[] = [
  { op: "add-service", server: server(web, { timeout: 10800 }) },
  { op: "add-real", key: web, real: { address: "10.244.1.7", port: 8080, weight: 1 } },
  { op: "add-real", key: web, real: { address: "10.244.2.9", port: 8080, weight: 1 } },
  { op: "add-service", server: server(dns, { scheduler: "sh", flags: ["sh-fallback", "sh-port"] }) },
  { op: "add-real", key: dns, real: { address: "fd00:10:244::3", port: 53, weight: 1 } },
];

describe("IpvsClient against FakeIpvs", () => {
  test("apply writes every change with one ipvsadm --restore and read() sees them", async () => {
    const { fake, exec, client } = setup();
    await client.apply(initial);
    expect(exec.callsTo("ipvsadm").map((c) => c.args)).toEqual([["--restore"]]);
    expect(fake.services()).toEqual([
      {
        server: server(web, { timeout: 10800 }),
        reals: [
          { address: "10.244.1.7", port: 8080, weight: 1, activeConnections: 0, inactiveConnections: 0 },
          { address: "10.244.2.9", port: 8080, weight: 1, activeConnections: 0, inactiveConnections: 0 },
        ],
      },
      {
        server: server(dns, { scheduler: "sh", flags: ["sh-fallback", "sh-port"] }),
        reals: [
          { address: "fd00:10:244::3", port: 53, weight: 1, activeConnections: 0, inactiveConnections: 0 },
        ],
      },
    ]);
    expect(await client.read()).toEqual(fake.services());
  });

  test("read() runs ipvsadm -L -n --exact once and reports connection counts", async () => {
    const { fake, exec, client } = setup();
    await client.apply(initial);
    fake.setConnections(web, { address: "10.244.2.9", port: 8080 }, 4, 1234567890);
    const before = exec.calls.length;
    const table = await client.read();
    expect(exec.calls.slice(before).map((c) => c.args)).toEqual([["-L", "-n", "--exact"]]);
    expect(table[0]!.reals[1]).toEqual({
      address: "10.244.2.9",
      port: 8080,
      weight: 1,
      activeConnections: 4,
      inactiveConnections: 1234567890,
    });
  });

  test("readServices() lists just the virtual servers asked for, one call each; missing ones are left out", async () => {
    const { fake, exec, client } = setup();
    await client.apply(initial);
    fake.setConnections(dns, { address: "fd00:10:244::3", port: 53 }, 0, 7);
    const missing: VirtualServerKey = { address: "10.96.0.99", port: 443, protocol: "TCP" };
    const before = exec.calls.length;
    const listed = await client.readServices([dns, missing]);
    expect(exec.calls.slice(before).map((c) => c.args)).toEqual([
      ["-L", "-n", "--exact", "-u", "[fd00:10:96::a]:53"],
      ["-L", "-n", "--exact", "-t", "10.96.0.99:443"],
    ]);
    expect(listed).toEqual(fake.services().filter((s) => s.server.address === dns.address));
    expect(listed[0]!.reals[0]!.inactiveConnections).toBe(7);
    expect(await client.readServices([])).toEqual([]);
  });

  test("edits and deletes: graceful termination sets weight 0, then removes the real server", async () => {
    const { fake, client } = setup();
    await client.apply(initial);
    fake.setConnections(web, { address: "10.244.1.7", port: 8080 }, 2, 5);
    await client.apply([
      { op: "edit-real", key: web, real: { address: "10.244.1.7", port: 8080, weight: 0 } },
      { op: "edit-service", server: server(web, { scheduler: "wrr" }) },
      { op: "delete-service", key: dns },
    ]);
    const [svc] = fake.services();
    expect(fake.services()).toHaveLength(1);
    expect(svc!.server).toEqual(server(web, { scheduler: "wrr" }));
    expect(svc!.reals[0]).toEqual({
      address: "10.244.1.7",
      port: 8080,
      weight: 0,
      activeConnections: 2,
      inactiveConnections: 5,
    });
    await client.apply([{ op: "delete-real", key: web, real: { address: "10.244.1.7", port: 8080 } }]);
    expect(fake.services()[0]!.reals.map((r) => r.address)).toEqual(["10.244.2.9"]);
  });

  test("batching: N changes are exactly one exec call; no changes, no call", async () => {
    const { exec, client } = setup();
    const many: IpvsChange[] = [];
    for (let i = 0; i < 200; i++) {
      const key: VirtualServerKey = { address: `10.96.${i >> 8}.${i & 255}`, port: 80, protocol: "TCP" };
      many.push({ op: "add-service", server: server(key) });
      many.push({ op: "add-real", key, real: { address: "10.244.0.5", port: 8080, weight: 1 } });
    }
    await client.apply(many);
    await client.apply([]);
    expect(exec.callsTo("ipvsadm")).toHaveLength(1);
    expect(exec.calls[0]!.stdin!.split("\n")).toHaveLength(401);
  });

  test("a refused line becomes an IpvsError naming it; the other lines still applied", async () => {
    const { fake, client } = setup();
    await client.apply(initial);
    const err = await thrown(
      client.apply([
        { op: "add-service", server: server({ ...web, port: 81 }) },
        { op: "add-real", key: web, real: { address: "10.244.1.7", port: 8080, weight: 1 } },
        { op: "add-real", key: { ...web, port: 81 }, real: { address: "10.244.1.7", port: 8080, weight: 1 } },
      ]),
    );
    expect(err.kind).toBe("restore");
    expect(err.failures).toEqual([
      {
        message: "Destination already exists",
        line: 2,
        text: "-a -t 10.96.143.7:80 -r 10.244.1.7:8080 -m -w 1",
        candidates: [2],
      },
    ]);
    expect(err.line).toBe(2);
    // ipvsadm's exit status is the last line's: 0 here, so the client goes by stderr.
    expect(err.exitCode).toBe(0);
    expect(fake.services().map((s) => s.server.port)).toEqual([80, 81, 53]);
  });

  test("several refusals are matched to lines in order", async () => {
    // wlc is a scheduler restore-text writes, but this kernel has not loaded it.
    const { client } = setup({ schedulers: ["rr", "sh"] });
    await client.apply(initial);
    const err = await thrown(
      client.apply([
        { op: "add-service", server: server(web) },
        { op: "add-service", server: server({ ...web, port: 82 }, { scheduler: "wlc" }) },
        { op: "delete-real", key: web, real: { address: "10.244.9.9", port: 8080 } },
        { op: "add-service", server: server({ ...web, port: 83 }) },
      ]),
    );
    expect(err.failures.map((f) => [f.message, f.line])).toEqual([
      ["Service already exists", 1],
      ["Scheduler or persistence engine not found", 2],
      ["No such destination", 3],
    ]);
  });

  test("unavailable IPVS is a typed error on every method", async () => {
    const { client } = setup({ available: false });
    for (const p of [
      client.read(),
      client.readServices([web]),
      client.apply(initial),
      client.flush(),
      client.setTimeouts({ tcp: 900, tcpFin: 120, udp: 300 }),
    ]) {
      const err = await thrown(p);
      expect(err.kind).toBe("unavailable");
      expect(err.isUnavailable).toBe(true);
      expect(err.exitCode).toBe(2);
      expect(err.stderr).toBe(`${IPVS_UNAVAILABLE_MESSAGE}\n`);
    }
  });

  test("setTimeouts sends the three values; zeros leave the kernel's values alone", async () => {
    const { fake, exec, client } = setup();
    await client.setTimeouts({ tcp: 0, tcpFin: 30, udp: 0 });
    expect(exec.calls.map((c) => c.args)).toEqual([["--set", "0", "30", "0"]]);
    expect(fake.timeouts()).toEqual({ tcp: 900, tcpFin: 30, udp: 300 });
    await client.setTimeouts({ tcp: 0, tcpFin: 0, udp: 0 });
    expect(exec.calls).toHaveLength(1);
    await expect(client.setTimeouts({ tcp: -1, tcpFin: 0, udp: 0 })).rejects.toThrow(IpvsError);
  });

  test("flush removes every virtual server with ipvsadm -C", async () => {
    const { fake, exec, client } = setup();
    await client.apply(initial);
    await client.flush();
    expect(exec.calls.at(-1)!.args).toEqual(["-C"]);
    expect(fake.services()).toEqual([]);
  });

  test("invalid input is refused before ipvsadm runs", async () => {
    const { exec, client } = setup();
    const err = await thrown(client.apply([{ op: "delete-service", key: { ...web, address: "not-an-ip" } }]));
    expect(err.kind).toBe("invalid");
    expect(exec.calls).toHaveLength(0);
  });

  test("a missing ipvsadm and a garbled listing are typed too", async () => {
    const missing = createIpvsClient({ exec: new FakeExec() });
    expect((await thrown(missing.read())).kind).toBe("not-found");
    const garbled = createIpvsClient({ exec: new FakeExec({ ipvsadm: () => ok("what is this\n") }) });
    expect((await thrown(garbled.read())).kind).toBe("parse");
    const broken = createIpvsClient({
      exec: new FakeExec({ ipvsadm: () => fail(1, "Memory allocation problem\n") }),
    });
    const err = await thrown(broken.read());
    expect(err.kind).toBe("failed");
    expect(err.message).toContain("Memory allocation problem");
  });
});

describe("attributeRestoreFailures", () => {
  const input = [
    "-A -t 10.0.0.1:80 -s rr",
    "-a -t 10.0.0.1:80 -r 10.244.0.1:80 -m -w 1",
    "-A -t 10.0.0.2:80 -s rr",
    "-a -t 10.0.0.2:80 -r 10.244.0.1:80 -m -w 1",
    "",
  ].join("\n");

  test("an ambiguous message lists its candidates without guessing", () => {
    expect(attributeRestoreFailures(input, "Service already exists\n")).toEqual([
      { message: "Service already exists", candidates: [1, 3] },
    ]);
  });

  test("the exit status is the last line's: 0 clears it, 255 blames it", () => {
    const two = "Destination already exists\n";
    expect(attributeRestoreFailures(input, two, 0).map((f) => f.line)).toEqual([2]);
    expect(attributeRestoreFailures(input, two, 255).map((f) => f.line)).toEqual([4]);
  });

  test("order narrows: a later message pins an earlier one", () => {
    const res = attributeRestoreFailures(
      input,
      "Service already exists\nDestination already exists\nDestination already exists\n",
    );
    expect(res.map((f) => f.line)).toEqual([1, 2, 4]);
  });

  test("a command-line error is the first line ipvsadm cannot parse", () => {
    const bad = `${input}-A -t 10.0.0.3:80 -s rr -b nonsense\n-C\n`;
    const res = attributeRestoreFailures(bad, "invalid scheduler flag `nonsense'\n");
    expect(res).toEqual([
      {
        message: "invalid scheduler flag `nonsense'",
        line: 5,
        text: "-A -t 10.0.0.3:80 -s rr -b nonsense",
        candidates: [5],
      },
    ]);
  });
});

describe("ipvsadm's version warning", () => {
  test("is not taken for a failure", async () => {
    const warning =
      "Warning: IPVS version mismatch: \n  Kernel compiled with IPVS version 1.1.9\n  ipvsadm v1.31  requires minimum IPVS version 1.2.0\n\n";
    const exec = new FakeExec({ ipvsadm: () => ({ code: 0, stdout: "", stderr: warning }) });
    const client = createIpvsClient({ exec });
    await client.flush();
    await client.apply([{ op: "delete-service", key: web }]);
  });
});

describe("IpvsClient bounds", () => {
  const timeouts = (exec: FakeExec, first: string) =>
    exec
      .callsTo("ipvsadm")
      .filter((c) => c.args[0] === first)
      .map((c) => c.timeoutMs);
  const many: IpvsChange[] = [
    { op: "add-service", server: server(web) },
    ...Array.from(
      { length: 2499 },
      (_, i): IpvsChange => ({
        op: "add-real",
        key: web,
        real: { address: `10.244.${i >> 8}.${i & 255}`, port: 8080, weight: 1 },
      }),
    ),
  ];

  test("a restore's bound grows with its lines; a listing expects the last one's plus those written since", async () => {
    const fake = new FakeIpvs();
    const exec = fake.install();
    const client = createIpvsClient({ exec, timeoutMs: 1000, perThousandLinesMs: 100 });
    await client.read();
    await client.apply(many);
    expect((await client.read())[0]?.reals.length).toBe(2499);
    await client.apply(initial.slice(3));
    await client.read();
    expect(timeouts(exec, "--restore")).toEqual([1200, 1000]);
    expect(timeouts(exec, "-L")).toEqual([1000, 1200, 1200]);
  });

  test("a listing that timed out is given twice as long the next time", async () => {
    let slow = true;
    const inner = new FakeIpvs().install();
    const exec = new FakeExec({
      ipvsadm: (req) =>
        slow && req.args[0] === "-L" ? { code: 124, stdout: "", stderr: "", timedOut: true } : inner.run(req),
    });
    const client = createIpvsClient({ exec, timeoutMs: 1000, perThousandLinesMs: 100 });
    expect((await thrown(client.read())).message).toContain("timed out");
    expect((await thrown(client.read())).message).toContain("timed out");
    slow = false;
    await client.read();
    await client.read();
    expect(timeouts(exec, "-L")).toEqual([1000, 2000, 4000, 1000]);
  });
});

import { describe, expect, test } from "bun:test";
import { FakeExec, ok } from "../../../src/exec/testing/fake.ts";
import { createNetlinkClient, parseIpAddrShow, renderBindBatch } from "../../../src/host/netlink/client.ts";
import { NetlinkError } from "../../../src/host/netlink/errors.ts";
import { FakeNetlink } from "../../../src/host/netlink/testing/fake.ts";

function setup(opts: ConstructorParameters<typeof FakeNetlink>[0] = {}) {
  const fake = new FakeNetlink(opts);
  const exec = fake.install();
  return { fake, exec, client: createNetlinkClient({ exec }) };
}

async function thrown(p: Promise<unknown>): Promise<NetlinkError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof NetlinkError) return err;
    throw err;
  }
  throw new Error("expected a NetlinkError");
}

// `ip -o addr show` on a node (iproute2 6.1): loopback, the node NIC, a node-local DNS dummy,
// kube-ipvs0 with service IPs, and a pod veth with only a link-local address.
const NODE = `1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
1: lo    inet6 ::1/128 scope host noprefixroute \\       valid_lft forever preferred_lft forever
2: eth0    inet 172.18.0.2/16 brd 172.18.255.255 scope global eth0\\       valid_lft forever preferred_lft forever
2: eth0    inet6 fc00:f853:ccd:e793::2/64 scope global nodad \\       valid_lft forever preferred_lft forever
2: eth0    inet6 fe80::42:acff:fe12:2/64 scope link \\       valid_lft forever preferred_lft forever
3: nodelocaldns    inet 169.254.20.10/32 scope global nodelocaldns\\       valid_lft forever preferred_lft forever
4: kube-ipvs0    inet 10.96.0.1/32 scope global kube-ipvs0\\       valid_lft forever preferred_lft forever
4: kube-ipvs0    inet 10.96.0.10/32 scope global kube-ipvs0\\       valid_lft forever preferred_lft forever
4: kube-ipvs0    inet6 fd00:10:96::1/128 scope global tentative \\       valid_lft forever preferred_lft forever
7: veth1a2b3c4d    inet6 fe80::c8d2:1bff:fe3e:5a01/64 scope link \\       valid_lft forever preferred_lft forever
8: tun0    inet 10.8.0.1 peer 10.8.0.2/32 scope global tun0\\       valid_lft forever preferred_lft forever
`;

describe("parseIpAddrShow", () => {
  test("reads device, family, address, prefix and scope", () => {
    const addrs = parseIpAddrShow(NODE);
    expect(addrs).toHaveLength(11);
    expect(addrs[2]).toEqual({
      index: 2,
      device: "eth0",
      family: 4,
      address: "172.18.0.2",
      prefix: 16,
      scope: "global",
    });
    expect(addrs[8]).toMatchObject({
      device: "kube-ipvs0",
      family: 6,
      address: "fd00:10:96::1",
      prefix: 128,
    });
    expect(addrs[10]).toMatchObject({ device: "tun0", address: "10.8.0.1", prefix: 32 });
  });
});

describe("NetlinkClient against FakeNetlink", () => {
  test("ensureDummyDevice creates the device (left down, as upstream) and reports an existing one", async () => {
    const { fake, exec, client } = setup();
    expect(await client.ensureDummyDevice("kube-ipvs0")).toBe(false);
    expect(exec.calls.map((c) => c.args)).toEqual([["link", "add", "name", "kube-ipvs0", "type", "dummy"]]);
    expect(fake.deviceKind("kube-ipvs0")).toBe("dummy");
    expect(fake.isUp("kube-ipvs0")).toBe(false);
    expect(await client.ensureDummyDevice("kube-ipvs0")).toBe(true);
  });

  test("a kernel without dummy devices is a typed error", async () => {
    const { client } = setup({ dummySupported: false });
    const err = await thrown(client.ensureDummyDevice("kube-ipvs0"));
    expect(err.isUnsupportedType).toBe(true);
    expect(err.exitCode).toBe(2);
    expect(err.stderr).toBe("Error: Unknown device type.\n");
  });

  test("bindAddresses is one ip -force -batch - call; listAddresses reads them back", async () => {
    const { fake, exec, client } = setup();
    await client.ensureDummyDevice("kube-ipvs0");
    await client.bindAddresses("kube-ipvs0", ["10.96.0.1", "10.96.0.10", "FD00:10:96::1"], []);
    expect(exec.calls.at(-1)).toEqual({
      cmd: "ip",
      args: ["-force", "-batch", "-"],
      stdin:
        "address add 10.96.0.1/32 dev kube-ipvs0\naddress add 10.96.0.10/32 dev kube-ipvs0\naddress add fd00:10:96::1/128 dev kube-ipvs0\n",
      timeoutMs: 30_000,
    });
    expect(fake.addresses("kube-ipvs0")).toEqual(["10.96.0.1/32", "10.96.0.10/32", "fd00:10:96::1/128"]);
    expect(await client.listAddresses("kube-ipvs0")).toEqual(["10.96.0.1", "10.96.0.10", "fd00:10:96::1"]);

    await client.bindAddresses("kube-ipvs0", ["10.96.0.11"], ["10.96.0.10", "fd00:10:96::1"]);
    expect(fake.addresses("kube-ipvs0")).toEqual(["10.96.0.1/32", "10.96.0.11/32"]);
  });

  test("batching: N binds and unbinds are exactly one exec call; nothing to do, no call", async () => {
    const { exec, client } = setup();
    await client.ensureDummyDevice("kube-ipvs0");
    const before = exec.calls.length;
    const add = Array.from({ length: 300 }, (_, i) => `10.96.${i >> 8}.${i & 255}`);
    await client.bindAddresses("kube-ipvs0", add, []);
    await client.bindAddresses("kube-ipvs0", add.slice(150), add.slice(0, 150));
    await client.bindAddresses("kube-ipvs0", [], []);
    expect(exec.calls.length - before).toBe(2);
  });

  test("binding a bound address and unbinding a missing one are not errors (upstream's EEXIST/ENXIO)", async () => {
    const { fake, client } = setup();
    await client.ensureDummyDevice("kube-ipvs0");
    await client.bindAddresses("kube-ipvs0", ["10.96.0.1", "fd00::1"], []);
    await client.bindAddresses(
      "kube-ipvs0",
      ["10.96.0.1", "fd00::1", "10.96.0.2"],
      ["10.96.0.99", "fd00::99"],
    );
    expect(fake.addresses("kube-ipvs0")).toEqual(["10.96.0.1/32", "10.96.0.2/32", "fd00::1/128"]);
  });

  test("other refusals are a NetlinkError naming the batch line; -force still applied the rest", async () => {
    const { fake, client } = setup();
    const err = await thrown(client.bindAddresses("kube-ipvs0", ["10.96.0.1"], []));
    expect(err.failures).toEqual([
      {
        line: 1,
        text: "address add 10.96.0.1/32 dev kube-ipvs0",
        message: 'Cannot find device "kube-ipvs0"',
      },
    ]);
    expect(err.line).toBe(1);
    expect(err.exitCode).toBe(1);
    expect(fake.hasDevice("kube-ipvs0")).toBe(false);
    await expect(client.bindAddresses("kube-ipvs0", ["not-an-ip"], [])).rejects.toThrow("not an IP address");
  });

  test("listAddresses of a missing device is a not-found error", async () => {
    const { client } = setup();
    const err = await thrown(client.listAddresses("kube-ipvs0"));
    expect(err.isNotFound()).toBe(true);
    expect(err.stderr).toBe('Device "kube-ipvs0" does not exist.\n');
  });

  test("deleteDevice removes a device; a missing one is fine", async () => {
    const { fake, exec, client } = setup();
    await client.ensureDummyDevice("kube-ipvs0");
    await client.deleteDevice("kube-ipvs0");
    expect(exec.calls.at(-1)!.args).toEqual(["link", "del", "dev", "kube-ipvs0"]);
    expect(fake.hasDevice("kube-ipvs0")).toBe(false);
    await client.deleteDevice("kube-ipvs0");
  });

  test("localAddresses: every node address except loopback, IPv6 link-local and the excluded device", async () => {
    const exec = new FakeExec({ ip: () => ok(NODE) });
    const client = createNetlinkClient({ exec });
    expect(await client.localAddresses("kube-ipvs0")).toEqual([
      { device: "eth0", address: "172.18.0.2" },
      { device: "eth0", address: "fc00:f853:ccd:e793::2" },
      // Upstream drops only IPv6 link-local; an IPv4 169.254/16 node address (node-local DNS) stays.
      { device: "nodelocaldns", address: "169.254.20.10" },
      { device: "tun0", address: "10.8.0.1" },
    ]);
    expect(exec.calls.map((c) => c.args)).toEqual([["-o", "addr", "show"]]);
    expect((await client.localAddresses()).map((a) => a.address)).toContain("10.96.0.1");
  });

  test("localAddresses against the fake node", async () => {
    const { fake, client } = setup();
    fake.addDevice("eth0", "ether", { addresses: ["172.18.0.2/16", "fe80::1/64", "fc00::2/64"] });
    await client.ensureDummyDevice("kube-ipvs0");
    await client.bindAddresses("kube-ipvs0", ["10.96.0.1"], []);
    expect(await client.localAddresses("kube-ipvs0")).toEqual([
      { device: "eth0", address: "172.18.0.2" },
      { device: "eth0", address: "fc00::2" },
    ]);
  });

  test("renderBindBatch: unbinds first, host prefixes, canonical addresses", () => {
    expect(renderBindBatch("kube-ipvs0", ["2001:DB8::1"], ["10.0.0.1"])).toBe(
      "address del 10.0.0.1/32 dev kube-ipvs0\naddress add 2001:db8::1/128 dev kube-ipvs0\n",
    );
  });
});

describe("NetlinkClient bounds", () => {
  test("a batch's bound grows with its lines; an address listing expects the last one's plus the binds since", async () => {
    const fake = new FakeNetlink();
    const exec = fake.install();
    const client = createNetlinkClient({ exec, timeoutMs: 1000, perThousandLinesMs: 100 });
    await client.ensureDummyDevice("kube-ipvs0");
    const add = Array.from({ length: 1500 }, (_, i) => `10.96.${i >> 8}.${i & 255}`);
    await client.allAddresses();
    await client.bindAddresses("kube-ipvs0", add, []);
    expect(await client.listAddresses("kube-ipvs0")).toHaveLength(1500);
    await client.bindAddresses("kube-ipvs0", ["10.97.0.1"], add.slice(0, 10));
    await client.allAddresses();
    const bounds = (what: string) =>
      exec
        .callsTo("ip")
        .filter((c) => c.args.includes(what))
        .map((c) => c.timeoutMs);
    expect(bounds("-batch")).toEqual([1100, 1000]);
    expect(bounds("show")).toEqual([1000, 1100, 1100]);
  });
});

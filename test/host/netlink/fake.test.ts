// FakeNetlink's behaviours that test/vm/netlink-fake-vs-real.vm.ts found in the real `ip`
// (iproute2 6.1) on a kernel with dummy devices, pinned here so host runs keep them.

import { describe, expect, test } from "bun:test";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { FakeNetlink, type FakeNetlinkOptions } from "../../../src/host/netlink/testing/fake.ts";

function setup(opts: FakeNetlinkOptions = {}) {
  const fake = new FakeNetlink({ loopback: "down", ...opts });
  const exec = fake.install(new FakeExec());
  const ip = (line: string, stdin?: string) =>
    exec.run({ cmd: "ip", args: line.split(" "), ...(stdin !== undefined ? { stdin } : {}) });
  return { fake, ip };
}

describe("FakeNetlink on the dummy-device path", () => {
  test("kernel 6.1 words refused address changes as errno text", async () => {
    const { ip } = setup({ addressErrors: "errno" });
    await ip("link add kube-ipvs0 type dummy");
    await ip("addr add 192.0.2.10/32 dev kube-ipvs0");
    expect(await ip("addr add 192.0.2.10/32 dev kube-ipvs0")).toEqual({
      code: 2,
      stdout: "",
      stderr: "RTNETLINK answers: File exists\n",
    });
    expect(await ip("addr del 2001:db8::99/128 dev kube-ipvs0")).toEqual({
      code: 2,
      stdout: "",
      stderr: "RTNETLINK answers: Cannot assign requested address\n",
    });
  });

  test("IPv6 on a down dummy is not tentative (NOARP skips duplicate detection)", async () => {
    const { ip } = setup();
    await ip("link add kube-ipvs0 type dummy");
    await ip("addr add 2001:db8::10/128 dev kube-ipvs0");
    expect((await ip("-o addr show dev kube-ipvs0")).stdout).toBe(
      "2: kube-ipvs0    inet6 2001:db8::10/128 scope global \\       valid_lft forever preferred_lft forever\n",
    );
  });

  test("an IPv4 delete without a prefix works with a warning", async () => {
    const { fake, ip } = setup();
    await ip("link add kube-ipvs0 type dummy");
    await ip("addr add 192.0.2.10/32 dev kube-ipvs0");
    const res = await ip("addr del 192.0.2.10 dev kube-ipvs0");
    expect(res.code).toBe(0);
    expect(res.stderr).toStartWith(
      "Warning: Executing wildcard deletion to stay compatible with old scripts.\n",
    );
    expect(res.stderr).toContain("(192.0.2.10/32)");
    expect(fake.addresses("kube-ipvs0")).toEqual([]);
  });

  test("in a -force batch, a line without dev or without an address fails alone", async () => {
    const { fake, ip } = setup();
    await ip("link add kube-ipvs0 type dummy");
    const res = await ip(
      "-force -batch -",
      "address add 198.51.100.20/32\naddress add dev kube-ipvs0\naddress add 198.51.100.21/32 dev kube-ipvs0\n",
    );
    expect(res).toEqual({
      code: 1,
      stdout: "",
      stderr: [
        'Not enough information: "dev" argument is required.',
        "Command failed -:1",
        "RTNETLINK answers: Operation not supported",
        "Command failed -:2",
        "",
      ].join("\n"),
    });
    expect(fake.addresses("kube-ipvs0")).toEqual(["198.51.100.21/32"]);
  });
});

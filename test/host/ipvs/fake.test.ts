import { describe, expect, test } from "bun:test";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { IPVS_UNAVAILABLE_MESSAGE } from "../../../src/host/ipvs/errors.ts";
import { FakeIpvs } from "../../../src/host/ipvs/testing/fake.ts";

function setup(opts: ConstructorParameters<typeof FakeIpvs>[0] = {}) {
  const fake = new FakeIpvs(opts);
  const exec = fake.install(new FakeExec());
  const ipvsadm = (args: string[], stdin?: string) =>
    exec.run({ cmd: "ipvsadm", args, ...(stdin !== undefined ? { stdin } : {}) });
  return { fake, exec, ipvsadm };
}

const TABLE = `-A -t 10.96.0.10:53 -s rr
-a -t 10.96.0.10:53 -r 10.244.0.4:53 -m -w 1
-a -t 10.96.0.10:53 -r 10.244.0.3:53 -m -w 1
-A -u 10.96.0.10:53 -s rr
-a -u 10.96.0.10:53 -r 10.244.0.3:53 -m -w 1
-A -t 10.96.0.1:443 -s rr -p 10800
-a -t 10.96.0.1:443 -r 172.18.0.2:6443 -m -w 1
-A -t [fd00:10:96::1]:443 -s mh -b mh-port
-a -t [fd00:10:96::1]:443 -r [fc00:f853:ccd:e793::2]:6443 -m -w 1
`;

describe("FakeIpvs as ipvsadm", () => {
  test("--restore applies every line; -S -n prints the table in ipvsadm's order", async () => {
    const { ipvsadm } = setup();
    expect(await ipvsadm(["--restore"], TABLE)).toEqual({ code: 0, stdout: "", stderr: "" });
    const save = await ipvsadm(["-S", "-n"]);
    expect(save.stdout).toBe(`-A -t 10.96.0.1:443 -s rr -p 10800
-a -t 10.96.0.1:443 -r 172.18.0.2:6443 -m -w 1
-A -t 10.96.0.10:53 -s rr
-a -t 10.96.0.10:53 -r 10.244.0.3:53 -m -w 1
-a -t 10.96.0.10:53 -r 10.244.0.4:53 -m -w 1
-A -u 10.96.0.10:53 -s rr
-a -u 10.96.0.10:53 -r 10.244.0.3:53 -m -w 1
-A -t [fd00:10:96::1]:443 -s mh -b mh-port
-a -t [fd00:10:96::1]:443 -r [fc00:f853:ccd:e793::2]:6443 -m -w 1
`);
  });

  test("-L -n --exact prints ipvsadm's columns", async () => {
    const { fake, ipvsadm } = setup();
    fake.load(TABLE);
    fake.setConnections(
      { address: "10.96.0.1", port: 443, protocol: "TCP" },
      { address: "172.18.0.2", port: 6443 },
      12,
      3456,
    );
    const res = await ipvsadm(["-L", "-n", "--exact"]);
    expect(res.stdout).toBe(`IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.96.0.1:443 rr persistent 10800
  -> 172.18.0.2:6443              Masq    1      12         3456      
TCP  10.96.0.10:53 rr
  -> 10.244.0.3:53                Masq    1      0          0         
  -> 10.244.0.4:53                Masq    1      0          0         
UDP  10.96.0.10:53 rr
  -> 10.244.0.3:53                Masq    1      0          0         
TCP  [fd00:10:96::1]:443 mh (mh-port)
  -> [fc00:f853:ccd:e793::2]:6443 Masq    1      0          0         
`);
  });

  test("a refused line prints ipvs_strerror() text and the next line still runs", async () => {
    const { fake, ipvsadm } = setup();
    fake.load(TABLE);
    const res = await ipvsadm(
      ["--restore"],
      [
        "-A -t 10.96.0.10:53 -s rr",
        "-A -t 10.96.0.11:53 -s nosuch",
        "-E -t 10.96.9.9:53 -s rr",
        "-D -t 10.96.9.9:53",
        "-a -t 10.96.9.9:53 -r 10.244.0.3:53 -m",
        "-a -t 10.96.0.10:53 -r 10.244.0.3:53 -m",
        "-e -t 10.96.0.10:53 -r 10.244.9.9:53 -m",
        "-d -t 10.96.0.10:53 -r 10.244.9.9:53",
        "-A -t 10.96.0.12:53 -s rr",
        "",
      ].join("\n"),
    );
    expect(res).toEqual({
      code: 0, // the last line succeeded
      stdout: "",
      stderr: [
        "Service already exists",
        "Scheduler or persistence engine not found",
        "No such service",
        "No such service",
        "Service not defined",
        "Destination already exists",
        "No such destination",
        "No such destination",
        "",
      ].join("\n"),
    });
    expect(fake.services().map((s) => `${s.server.protocol}/${s.server.address}:${s.server.port}`)).toContain(
      "TCP/10.96.0.12:53",
    );
  });

  test("the exit status is the last line's", async () => {
    const { ipvsadm } = setup();
    const res = await ipvsadm(["--restore"], "-A -t 10.0.0.1:80 -s rr\n-A -t 10.0.0.1:80 -s rr\n");
    expect(res.code).toBe(255);
  });

  test("a command-line error ends the restore with exit 2; earlier lines stay applied", async () => {
    const { fake, ipvsadm } = setup();
    const res = await ipvsadm(
      ["--restore"],
      "-A -t 10.0.0.1:80 -s rr\n-A -t 10.0.0.2:80 -s rr -b nonsense\n-A -t 10.0.0.3:80 -s rr\n",
    );
    expect(res).toEqual({ code: 2, stdout: "", stderr: "invalid scheduler flag `nonsense'\n" });
    expect(fake.services().map((s) => s.server.address)).toEqual(["10.0.0.1"]);
  });

  test("--set and --timeout; -C clears; -Z is accepted", async () => {
    const { fake, ipvsadm } = setup();
    fake.load(TABLE);
    expect((await ipvsadm(["-L", "--timeout"])).stdout).toBe("Timeout (tcp tcpfin udp): 900 120 300\n");
    await ipvsadm(["--set", "7200", "0", "60"]);
    expect((await ipvsadm(["-L", "--timeout"])).stdout).toBe("Timeout (tcp tcpfin udp): 7200 120 60\n");
    expect((await ipvsadm(["-Z"])).code).toBe(0);
    expect((await ipvsadm(["-C"])).code).toBe(0);
    expect(fake.services()).toEqual([]);
  });

  test("listing one service, and a missing one", async () => {
    const { fake, ipvsadm } = setup();
    fake.load(TABLE);
    const one = await ipvsadm(["-L", "-n", "-u", "10.96.0.10:53"]);
    expect(one.stdout.split("\n")[2]).toBe("UDP  10.96.0.10:53 rr");
    expect(await ipvsadm(["-L", "-n", "-t", "10.9.9.9:1"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "No such service\n",
    });
  });

  test("available: false fails every call like a kernel without IPVS", async () => {
    const { ipvsadm } = setup({ available: false });
    for (const args of [["-L", "-n"], ["--restore"], ["-v"], ["-C"]]) {
      expect(await ipvsadm(args, "")).toEqual({
        code: 2,
        stdout: "",
        stderr: `${IPVS_UNAVAILABLE_MESSAGE}\n`,
      });
    }
  });

  test("schedulers not loaded in the kernel are refused", async () => {
    const { ipvsadm } = setup({ schedulers: ["rr"] });
    expect((await ipvsadm(["-A", "-t", "10.0.0.1:80", "-s", "sh"])).stderr).toBe(
      "Scheduler or persistence engine not found\n",
    );
    expect((await ipvsadm(["-A", "-t", "10.0.0.1:80", "-s", "rr"])).code).toBe(0);
  });

  // Behaviours test/vm/ipvs-fake-vs-real.vm.ts found in the real ipvsadm on kernel 6.1.

  test("a failed listing ends a --restore with exit 1; -v ends it with exit 0", async () => {
    const { fake, ipvsadm } = setup();
    expect(
      await ipvsadm(
        ["--restore"],
        "-A -t 192.0.2.1:80 -s rr\n-L -n -t 192.0.2.9:80\n-A -t 192.0.2.2:80 -s rr\n",
      ),
    ).toEqual({ code: 1, stdout: "", stderr: "No such service\n" });
    expect(await ipvsadm(["--restore"], "-A -t 192.0.2.3:80 -s rr\n-v\n-A -t 192.0.2.4:80 -s rr\n")).toEqual({
      code: 0,
      stdout: "ipvsadm v1.31 2019/12/24 (compiled with popt and IPVS v1.2.1)\n",
      stderr: "",
    });
    expect(fake.services().map((s) => s.server.address)).toEqual(["192.0.2.1", "192.0.2.3"]);
  });

  test("real servers: weights up to 2^31-1, thresholds, non-unicast addresses refused", async () => {
    const { ipvsadm } = setup();
    await ipvsadm(["-A", "-t", "192.0.2.1:80", "-s", "rr"]);
    expect((await ipvsadm(words("-a -t 192.0.2.1:80 -r 203.0.113.1:80 -m -w 2147483647"))).code).toBe(0);
    expect((await ipvsadm(words("-a -t 192.0.2.1:80 -r 203.0.113.2:80 -m -x 10 -y 5"))).code).toBe(0);
    expect((await ipvsadm(words("-a -t 192.0.2.1:80 -r 203.0.113.3:80 -i"))).code).toBe(0);
    expect(await ipvsadm(words("-a -t 192.0.2.1:80 -r 233.252.0.1:80 -m"))).toEqual({
      code: 255,
      stdout: "",
      stderr: "Invalid operation.  Possibly wrong module version, address not unicast, ...\n",
    });
    expect(
      (await ipvsadm(words("-Ln --thresholds"))).stdout,
    ).toBe(`IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port            Uthreshold Lthreshold ActiveConn InActConn 
  -> RemoteAddress:Port
TCP  192.0.2.1:80 rr
  -> 203.0.113.1:80               0          0          0          0         
  -> 203.0.113.2:80               10         5          0          0         
  -> 203.0.113.3:80               0          0          0          0         
`);
    expect((await ipvsadm(words("-Ln --stats"))).stdout).toBe(`IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes
  -> RemoteAddress:Port
TCP  192.0.2.1:80                        0        0        0        0        0
  -> 203.0.113.1:80                      0        0        0        0        0
  -> 203.0.113.2:80                      0        0        0        0        0
  -> 203.0.113.3:80                      0        0        0        0        0
`);
    expect((await ipvsadm(words("-S -n"))).stdout).toBe(`-A -t 192.0.2.1:80 -s rr
-a -t 192.0.2.1:80 -r 203.0.113.1:80 -m -w 2147483647
-a -t 192.0.2.1:80 -r 203.0.113.2:80 -m -w 1
-a -t 192.0.2.1:80 -r 203.0.113.3:80 -i -w 1 --tun-type ipip
`);
  });

  test("persistence: -p alone is 360 s; masks print unless they are the default", async () => {
    const { ipvsadm } = setup();
    for (const line of [
      "-A -t 192.0.2.1:80 -p",
      "-A -t 192.0.2.2:80 -p 60 -M 24",
      "-A -t 192.0.2.3:80 -p 60 -M 255.255.255.255",
      "-A -t [2001:db8::1]:80 -p 60 -M 64",
      "-A -t [2001:db8::2]:80 -p 60 -M 128",
    ]) {
      expect((await ipvsadm(words(line))).code).toBe(0);
    }
    expect((await ipvsadm(words("-S -n"))).stdout).toBe(`-A -t 192.0.2.1:80 -s wlc -p 360
-A -t 192.0.2.2:80 -s wlc -p 60 -M 0.0.0.24
-A -t 192.0.2.3:80 -s wlc -p 60
-A -t [2001:db8::1]:80 -s wlc -p 60 -M 64
-A -t [2001:db8::2]:80 -s wlc -p 60
`);
  });
});

function words(line: string): string[] {
  return line.split(" ");
}

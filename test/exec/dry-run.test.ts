import { describe, expect, test } from "bun:test";
import { DryRunRecorder, isReadOnlyCommand, stdinPieces } from "../../src/exec/dry-run.ts";
import { FakeExec, ok } from "../../src/exec/testing/fake.ts";

// [command line, read-only?]
const cases: [string, boolean][] = [
  // iptables family: save tools always print
  ["iptables-save", true],
  ["iptables-save -t nat", true],
  ["ip6tables-save -t filter", true],
  ["iptables-legacy-save", true],
  ["iptables-nft-save -t nat", true],
  ["ip6tables-legacy-save", true],
  ["ip6tables-nft-save", true],
  ["/usr/sbin/iptables-save -c", true],
  ["iptables-save -f /tmp/dump", false],
  ["iptables-restore --noflush --counters", false],
  ["ip6tables-restore -w 5", false],
  ["iptables-nft-restore --version", true],
  ["ip6tables-legacy-restore -V", true],
  ["iptables-restore --version --noflush", false],
  ["iptables --version", true],
  ["ip6tables-nft -V", true],
  ["iptables -w 5 -t nat -C KUBE-SERVICES -j KUBE-NODEPORTS", true],
  ["iptables -t nat --check POSTROUTING -j KUBE-POSTROUTING", true],
  ["iptables -t nat -L KUBE-SERVICES -n", true],
  ["iptables -nL", true],
  ["ip6tables-legacy --list-rules", true],
  ["iptables -S KUBE-FORWARD", true],
  ["iptables -L -Z", false],
  ["iptables -t nat -N KUBE-SERVICES", false],
  ["iptables -t nat -A PREROUTING -j KUBE-SERVICES", false],
  ["iptables -t nat -I OUTPUT 1 -j KUBE-SERVICES", false],
  ["iptables-legacy -t nat -F KUBE-SERVICES", false],
  ["iptables -t nat -X KUBE-SERVICES", false],
  ["ip6tables -D INPUT -j KUBE-FIREWALL", false],
  ["iptables -t nat", false],
  ["iptables", false],
  // ipset
  ["ipset --version", true],
  ["ipset -v", true],
  ["ipset version", true],
  ["ipset list", true],
  ["ipset list -n", true],
  ["ipset -n list", true],
  ["ipset list -name KUBE-CLUSTER-IP", true],
  ["ipset -terse list KUBE-LOOP-BACK", true],
  ["ipset -L", true],
  ["ipset save", true],
  ["ipset -S KUBE-NODE-PORT-TCP", true],
  ["ipset -o save list", true],
  ["ipset save -file /tmp/sets", false],
  ["ipset restore -exist", false],
  ["ipset create KUBE-CLUSTER-IP hash:ip,port", false],
  ["ipset add KUBE-CLUSTER-IP 198.51.100.1,tcp:443", false],
  ["ipset destroy KUBE-CLUSTER-IP", false],
  ["ipset flush", false],
  ["ipset", false],
  // ipvsadm
  ["ipvsadm -Sn", true],
  ["ipvsadm -S -n", true],
  ["ipvsadm --save", true],
  ["ipvsadm -Ln", true],
  ["ipvsadm -L -n -t 198.51.100.1:443", true],
  ["ipvsadm -l --stats", true],
  ["ipvsadm --list --numeric", true],
  ["ipvsadm --version", true],
  ["ipvsadm -A -t 198.51.100.1:443 -s rr", false],
  ["ipvsadm -a -t 198.51.100.1:443 -r 203.0.113.5:6443 -m -w 1", false],
  ["ipvsadm -d -t 198.51.100.1:443 -r 203.0.113.5:6443", false],
  ["ipvsadm -C", false],
  ["ipvsadm -R", false],
  ["ipvsadm -Z", false],
  ["ipvsadm --set 900 120 300", false],
  ["ipvsadm -L -Z", false],
  // the forms the ipvs, ipset and netlink clients run
  ["ipvsadm -L -n --exact", true],
  ["ipvsadm --restore", false],
  ["ipset restore -exist", false],
  ["ip -o addr show dev kube-ipvs0", true],
  ["ip -o addr show", true],
  ["ip -batch -", false],
  ["ip link del kube-ipvs0", false],
  // ip
  ["ip -o addr", true],
  ["ip -o -4 addr show dev kube-ipvs0", true],
  ["ip -6 -o address list", true],
  ["ip -j -br link", true],
  ["ip link show kube-ipvs0", true],
  ["ip l", true],
  ["ip a ls", true],
  ["ip route show table local", true],
  ["ip -4 r list", true],
  ["ip route get 198.51.100.1", true],
  ["ip rule", true],
  ["ip -f inet addr show", true],
  ["ip link add kube-ipvs0 type dummy", false],
  ["ip link set kube-ipvs0 up", false],
  ["ip addr add 198.51.100.1/32 dev kube-ipvs0", false],
  ["ip addr del 198.51.100.1/32 dev kube-ipvs0", false],
  ["ip -o addr flush dev kube-ipvs0", false],
  ["ip -batch /tmp/cmds", false],
  ["ip -force -batch -", false],
  ["ip neigh show", false],
  ["ip", false],
  // conntrack
  ["conntrack -L", true],
  ["conntrack -L -p udp --orig-dst 198.51.100.10", true],
  ["conntrack --dump -f ipv6", true],
  ["conntrack -C", true],
  ["conntrack --count", true],
  ["conntrack --version", true],
  ["conntrack -D -p udp --orig-dst 198.51.100.10", false],
  ["conntrack -F", false],
  ["conntrack -L -z", false],
  ["conntrack -E", false],
  // nfacct
  ["nfacct list", true],
  ["nfacct get packets_dropped", true],
  ["nfacct list reset", false],
  ["nfacct add packets_dropped", false],
  // modprobe
  // nft: listings only
  ["nft list tables", true],
  ["nft -a list table ip kube-proxy", true],
  ["nft --version", true],
  ["nft delete table ip kube-proxy", false],
  ["nft -f -", false],
  ["nft --check -f -", true],
  ["nft -c -f -", true],
  ["nft --json list chains ip", true],
  ["nft flush ruleset", false],
  ["nft list", false],
  ["modprobe -n -q -- ip_vs", true],
  ["modprobe --dry-run ip_vs_rr", true],
  ["modprobe -nq ip_vs_sh", true],
  ["modprobe -- ip_vs", false],
  ["modprobe -q -- nf_conntrack", false],
  ["modprobe -r ip_vs", false],
  ["modprobe -- -n", false],
  // the rest
  // Nothing in src runs uname or cat (the kernel release comes from os.release()), so they are
  // unknown commands like any other: treated as mutating and recorded, never run.
  ["uname -r", false],
  ["cat /proc/sys/net/ipv4/ip_forward", false],
  ["sysctl -w net.ipv4.ip_forward=1", false],
  ["rm -rf /", false],
  ["sh -c 'ipset list'", false],
];

describe("isReadOnlyCommand", () => {
  for (const [line, expected] of cases) {
    test(`${expected ? "read-only" : "mutating"}: ${line}`, () => {
      const [cmd, ...args] = line.split(" ");
      expect(isReadOnlyCommand({ cmd: cmd!, args })).toBe(expected);
    });
  }

  test("the table covers both sides generously", () => {
    expect(cases.filter(([, ro]) => ro).length).toBeGreaterThan(25);
    expect(cases.filter(([, ro]) => !ro).length).toBeGreaterThan(25);
  });
});

describe("DryRunRecorder", () => {
  const inner = () =>
    new FakeExec({
      "iptables-save": () => ok("*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n"),
      ipset: () => ok("Name: KUBE-CLUSTER-IP\n"),
      "iptables-restore": () => ({ code: 2, stdout: "", stderr: "should never run" }),
      ipvsadm: () => ({ code: 2, stdout: "", stderr: "should never run" }),
    });

  test("read-only commands reach the inner exec and are not recorded", async () => {
    const real = inner();
    const dry = new DryRunRecorder(real);
    const res = await dry.run({ cmd: "iptables-save", args: ["-t", "nat"] });
    expect(res.stdout).toContain("KUBE-SERVICES");
    expect((await dry.run({ cmd: "ipset", args: ["list", "-n"] })).stdout).toBe("Name: KUBE-CLUSTER-IP\n");
    expect(real.calls.map((c) => c.cmd)).toEqual(["iptables-save", "ipset"]);
    expect(dry.commands).toEqual([]);
  });

  test("mutating commands are recorded in order with stdin and never reach the inner exec", async () => {
    const real = inner();
    const dry = new DryRunRecorder(real);
    const restore = "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -j RETURN\nCOMMIT\n";
    const r1 = await dry.run({ cmd: "iptables-restore", args: ["--noflush", "--counters"], stdin: restore });
    await dry.run({ cmd: "ipvsadm", args: ["-A", "-t", "198.51.100.1:443", "-s", "rr"] });
    await dry.run({ cmd: "ipset", args: ["list"] });
    await dry.run({ cmd: "ipset", args: ["restore"], stdin: "" });

    expect(r1).toEqual({ code: 0, stdout: "", stderr: "" });
    expect(dry.commands).toEqual([
      { argv: ["iptables-restore", "--noflush", "--counters"], stdin: restore },
      { argv: ["ipvsadm", "-A", "-t", "198.51.100.1:443", "-s", "rr"] },
      { argv: ["ipset", "restore"], stdin: "" },
    ]);
    expect(real.calls.map((c) => c.cmd)).toEqual(["ipset"]);
    expect(real.calls[0]!.args).toEqual(["list"]);
  });

  test("an input in pieces is kept in pieces (big ones as they are), read as its text", async () => {
    const dry = new DryRunRecorder(inner());
    const big = "-A KUBE-SERVICES -j RETURN\n".repeat(4000);
    const pieces = ["*nat\n", big, "\n", "", "COMMIT", "\n"];
    await dry.run({ cmd: "iptables-restore", args: ["--noflush"], stdin: pieces });
    function* made() {
      yield "add rule ip t c accept\n";
      yield "add rule ip t c drop\n";
    }
    await dry.run({ cmd: "nft", args: ["-f", "-"], stdin: made() });
    const [restore, nft] = dry.commands;
    expect(restore!.stdin).toBe(pieces.join(""));
    expect(stdinPieces(restore!)!.join("")).toBe(pieces.join(""));
    // The big piece is the very string handed over: no copy of it was made.
    expect(stdinPieces(restore!)).toContain(big);
    expect(stdinPieces(nft!)).toEqual(["add rule ip t c accept\nadd rule ip t c drop\n"]);
    expect(dry.commands).toEqual([
      { argv: ["iptables-restore", "--noflush"], stdin: pieces.join("") },
      { argv: ["nft", "-f", "-"], stdin: [...made()].join("") },
    ]);
    expect(JSON.parse(JSON.stringify(dry.commands))[0].stdin).toBe(pieces.join(""));
    expect(stdinPieces({ stdin: "text" })).toEqual(["text"]);
    expect(stdinPieces({})).toBeUndefined();
  });

  test("a recorded command without stdin has no stdin key (clean JSON output)", async () => {
    const dry = new DryRunRecorder(inner());
    await dry.run({ cmd: "modprobe", args: ["--", "ip_vs"] });
    expect(JSON.stringify(dry.commands)).toBe('[{"argv":["modprobe","--","ip_vs"]}]');
  });
});

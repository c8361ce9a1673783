import { describe, expect, test } from "bun:test";
import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { createNfacctClient } from "../../../src/host/nfacct/client.ts";
import { FakeNfacct } from "../../../src/host/nfacct/testing/fake.ts";
import { memoryLogger, nullLogger } from "../../../src/log/logger.ts";
import { registerNfacctMetrics } from "../../../src/modes/iptables/nfacct-metrics.ts";
import { KubeRegistry } from "../../../src/proxy/metrics/registry.ts";
import { createTestNetns } from "../../host/iptables/netns.ts";

const CT = "kubeproxy_iptables_ct_state_invalid_dropped_packets_total";
const LOCAL = "kubeproxy_iptables_localhost_nodeports_accepted_packets_total";

function scrapeWith(fake: FakeNfacct | FakeExec, logger = nullLogger) {
  const exec = fake instanceof FakeNfacct ? fake.install() : fake;
  const registry = new KubeRegistry();
  registerNfacctMetrics(registry, createNfacctClient({ exec }), logger);
  return () => registry.metrics();
}

describe("nfacct counters at scrape time", () => {
  test("an existing nfacct object is a counter carrying its packet count", async () => {
    const fake = new FakeNfacct();
    const scrape = scrapeWith(fake);
    fake.handle({ cmd: "nfacct", args: ["add", "ct_state_invalid_dropped_pkts"] });
    fake.handle({ cmd: "nfacct", args: ["add", "localhost_nps_accepted_pkts"] });
    fake.count("ct_state_invalid_dropped_pkts", 5);
    fake.count("localhost_nps_accepted_pkts", 2);
    expect(await scrape()).toBe(
      `# HELP ${CT} [ALPHA] packets dropped by iptables to work around conntrack problems\n` +
        `# TYPE ${CT} counter\n${CT} 5\n` +
        `# HELP ${LOCAL} [ALPHA] Number of packets accepted on nodeports of loopback interface\n` +
        `# TYPE ${LOCAL} counter\n${LOCAL} 2\n`,
    );
    // Read afresh on every scrape.
    fake.count("localhost_nps_accepted_pkts", 1);
    expect(await scrape()).toContain(`\n${LOCAL} 3\n`);
  });

  test("a missing object leaves its family out entirely (no HELP, no TYPE, no 0)", async () => {
    const fake = new FakeNfacct();
    const scrape = scrapeWith(fake);
    fake.handle({ cmd: "nfacct", args: ["add", "ct_state_invalid_dropped_pkts"] });
    const text = await scrape();
    expect(text).toContain(`\n${CT} 0\n`);
    expect(text).not.toContain(LOCAL);
  });

  test("nfacct unusable: both families absent, the failure logged, the scrape still answers", async () => {
    const fake = new FakeNfacct();
    fake.supported = false;
    const log = memoryLogger();
    const scrape = scrapeWith(fake, log);
    expect(await scrape()).toBe("");
    expect(log.lines.join("\n")).toContain("Failed to collect nfacct counter");
  });

  test("nfacct binary missing: absent", async () => {
    const exec = new FakeExec({ nfacct: () => ({ code: 127, stdout: "", stderr: "nfacct: not found\n" }) });
    expect(await scrapeWith(exec)()).toBe("");
  });
});

describe("nfacct counters against the real nfacct in a netns", () => {
  test("absent before the object exists; then the kernel's packet count", async () => {
    const ns = await createTestNetns();
    try {
      const run = async (cmd: string, args: string[]) => {
        const r = await ns.exec.run({ cmd, args, timeoutMs: 15_000 });
        if (r.code !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${r.stderr}`);
        return r.stdout;
      };
      const registry = new KubeRegistry();
      registerNfacctMetrics(registry, createNfacctClient({ exec: ns.exec }), nullLogger);
      expect(await registry.metrics()).toBe("");

      await run("ip", ["link", "set", "lo", "up"]);
      await run("nfacct", ["add", "ct_state_invalid_dropped_pkts"]);
      expect(await registry.metrics()).toContain(`\n${CT} 0\n`);

      // Count UDP datagrams to 127.0.0.1 with the counter, as KUBE-FORWARD would count drops.
      await run("iptables", [
        "-w",
        "5",
        "-A",
        "OUTPUT",
        "-o",
        "lo",
        "-p",
        "udp",
        "--dport",
        "9",
        "-m",
        "nfacct",
        "--nfacct-name",
        "ct_state_invalid_dropped_pkts",
      ]);
      const send =
        'const s=require("node:dgram").createSocket("udp4");let n=0;' +
        'const go=()=>s.send("x",9,"127.0.0.1",()=>{if(++n<3)go();else s.close();});go();';
      await run(process.execPath, ["-e", send]);
      // The kernel's own count, as the nfacct tool prints it, is what the scrape reports.
      const kernel = /pkts = 0*(\d+)/.exec(await run("nfacct", ["get", "ct_state_invalid_dropped_pkts"]));
      expect(Number(kernel?.[1])).toBeGreaterThan(0);
      expect(await registry.metrics()).toContain(`\n${CT} ${Number(kernel?.[1])}\n`);
      expect(await registry.metrics()).not.toContain(LOCAL);
    } finally {
      await ns.remove();
    }
  }, 60_000);
});

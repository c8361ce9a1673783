// The image's nft and the node's must read each other's rulesets. nft 1.1.2 and later write set
// metadata that nft before 1.1.4 crashes on (SIGSEGV in any listing or transaction that walks the
// family's sets), so an image with a newer nft than the node's would break the node's own nft and
// every other program using it; upstream keeps nft 1.0.6 in its image for that reason. Here, in a
// fresh network namespace: the image's nft (test/support/image-nft.ts, the root
// scripts/build-rootfs builds) loads nftables mode's whole first transaction, the host's nft then
// lists the ruleset and adds a set of its own, and the image's nft lists it all.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { createTestNetns, type TestNetns } from "../host/iptables/netns.ts";
import { ensureBinary } from "../support/binary.ts";
import { imageNftProgram } from "../support/image-nft.ts";
import { scaled } from "../support/kernel-vm.ts";

/** nftables mode's first IPv4 transaction for examples/cluster.yaml, from the binary's dry run. */
function firstTransaction(): string {
  const r = spawnSync(
    ensureBinary(),
    ["--proxy-mode=nftables", "--dry-run", "--state", "examples/cluster.yaml", "--output=json"],
    { encoding: "utf8", timeout: scaled(60_000), maxBuffer: 64 << 20 },
  );
  const report = JSON.parse(r.stdout) as { commands: { argv: string[]; stdin?: string }[] };
  const tx = report.commands.find(
    (c) => c.argv.join(" ") === "nft -f -" && (c.stdin ?? "").startsWith("add table ip kube-proxy"),
  );
  if (!tx?.stdin)
    throw new Error(`no ip kube-proxy transaction in the dry run (exit ${r.status}): ${r.stderr}`);
  return tx.stdin;
}

describe("the image's nft and the host's read each other's rulesets", () => {
  let ns: TestNetns;
  let imageNft = "";

  beforeAll(
    async () => {
      imageNft = imageNftProgram();
      ns = await createTestNetns();
    },
    scaled(11 * 60_000),
  );
  afterAll(async () => {
    await ns?.remove();
  });

  test("kube-proxy's table written by the image's nft lists with the host's; the host's set lists with the image's", async () => {
    const load = await ns.exec.run({ cmd: imageNft, args: ["-f", "-"], stdin: firstTransaction() });
    expect(load.code, load.stderr).toBe(0);
    const hostList = await ns.exec.run({ cmd: "nft", args: ["list", "ruleset"] });
    expect(hostList.code, `host nft list ruleset: exit ${hostList.code} ${hostList.stderr}`).toBe(0);
    expect(hostList.stdout).toContain("table ip kube-proxy");
    const other = "add table ip othertool\nadd set ip othertool watched { type ipv4_addr ; }\n";
    const hostAdd = await ns.exec.run({ cmd: "nft", args: ["-f", "-"], stdin: other });
    expect(hostAdd.code, hostAdd.stderr).toBe(0);
    const imageList = await ns.exec.run({ cmd: imageNft, args: ["list", "ruleset"] });
    expect(imageList.code, `image nft list ruleset: exit ${imageList.code} ${imageList.stderr}`).toBe(0);
    expect(imageList.stdout).toContain("set watched");
  });
});

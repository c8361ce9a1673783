// The host a --dry-run replay plans on: every tool is a simulator (the same ones the tests run,
// each checked against its real tool), so a step's writes change what the next step reads,
// while nothing on the machine is touched. It starts from the first snapshot's HostState when
// one is given, else from an empty node carrying the Node's addresses.

import { createRecordingHashsize, createRecordingSysctl } from "../dryrun/recording-sysctl.ts";
import { DryRunRecorder } from "../exec/dry-run.ts";
import { SimulatedExec } from "../exec/simulated.ts";
import type { Exec } from "../exec/types.ts";
import { SimulatedConntrack } from "../host/conntrack/simulator.ts";
import { type HostState, statedIptablesVersion } from "../host/host-state/schema.ts";
import { createIpsetClient } from "../host/ipset/client.ts";
import { SimulatedIpset } from "../host/ipset/simulator.ts";
import { SimulatedIptables } from "../host/iptables/simulator/iptables.ts";
import { SimulatedIpvs } from "../host/ipvs/simulator.ts";
import { createSimulatedKernel } from "../host/kernel/simulator.ts";
import { SimulatedNetlink } from "../host/netlink/simulator.ts";
import { SimulatedNfacct } from "../host/nfacct/simulator.ts";
import { SimulatedNft } from "../host/nft/simulator.ts";
import { createSimulatedConntrackHashsize, createSimulatedSysctl } from "../host/sysctl/simulator.ts";
import type { Host } from "./host.ts";

/** The kernel a replay assumes when the snapshot states none: Debian 12's, with every module. */
const DEFAULT_KERNEL = "6.1.0";
const DEFAULT_MODULES = [
  "ip_vs",
  "ip_vs_rr",
  "ip_vs_wrr",
  "ip_vs_lc",
  "ip_vs_wlc",
  "ip_vs_sh",
  "ip_vs_mh",
  "ip_vs_sed",
  "ip_vs_nq",
  "ip_vs_dh",
  "ip_vs_lblc",
  "ip_vs_lblcr",
  "nf_conntrack",
  "nf_tables",
  "nft_chain_nat",
  "nft_ct",
  "nft_fib_inet",
  "nft_numgen",
  "nft_reject_inet",
  "ip_tables",
  "ip6_tables",
  "iptable_nat",
  "iptable_filter",
  "xt_comment",
  "xt_conntrack",
  "xt_mark",
  "xt_set",
  "xt_statistic",
];

/** What a freshly booted node reads for the tunables kube-proxy looks at. */
const DEFAULT_SYSCTLS: Record<string, number> = {
  "net/netfilter/nf_conntrack_max": 262144,
  "net/netfilter/nf_conntrack_tcp_timeout_established": 432000,
  "net/netfilter/nf_conntrack_tcp_timeout_close_wait": 60,
  "net/netfilter/nf_conntrack_tcp_be_liberal": 0,
  "net/netfilter/nf_conntrack_udp_timeout": 30,
  "net/netfilter/nf_conntrack_udp_timeout_stream": 120,
  "net/ipv4/conf/all/route_localnet": 0,
  "net/ipv6/conf/all/disable_ipv6": 0,
  "net/ipv4/ip_forward": 1,
  "net/bridge/bridge-nf-call-iptables": 1,
  "net/bridge/bridge-nf-call-ip6tables": 1,
};

/** The simulators behind a simulated host, for reading what the steps left. */
export interface Simulators {
  readonly iptables: { readonly IPv4: SimulatedIptables; readonly IPv6: SimulatedIptables };
  readonly nft: SimulatedNft;
  readonly ipvs: SimulatedIpvs;
  readonly ipset: SimulatedIpset;
  readonly net: SimulatedNetlink;
}

export interface SimulatedHost extends Host {
  readonly recorder: DryRunRecorder;
  readonly simulators: Simulators;
}

/** Runs one seeding command on the simulator; a refusal is the snapshot's fault, so it throws. */
async function seed(exec: Exec, what: string, cmd: string, args: string[], stdin: string): Promise<void> {
  const r = await exec.run({ cmd, args, stdin });
  if (r.code !== 0) throw new Error(`HostState ${what} cannot be loaded: ${(r.stderr || r.stdout).trim()}`);
}

/**
 * The simulated node. `nodeAddresses` are put on eth0 when the HostState lists no interfaces, so
 * NodePorts and node-IP checks see the addresses the Node reports.
 */
export async function createSimulatedHost(
  state: HostState | undefined,
  nodeAddresses: readonly string[],
): Promise<SimulatedHost> {
  const exec = new SimulatedExec();
  const stated = state?.iptablesVersion ? statedIptablesVersion(state.iptablesVersion) : undefined;
  const backend = stated?.mode === "legacy" ? "legacy" : "nft";
  const version = stated?.version ?? "1.8.9";
  const iptables = {
    IPv4: new SimulatedIptables({ backend, version }),
    IPv6: new SimulatedIptables({ backend, version }),
  };
  iptables.IPv4.install(exec, "IPv4");
  iptables.IPv6.install(exec, "IPv6");
  const nft = new SimulatedNft();
  nft.install(exec);
  const ipvs = new SimulatedIpvs();
  ipvs.install(exec);
  const ipset = new SimulatedIpset(
    state?.ipsetVersion ? { version: state.ipsetVersion.replace(/^v/, "") } : {},
  );
  ipset.install(exec);
  new SimulatedConntrack().install(exec);
  new SimulatedNfacct().install(exec);
  const net = new SimulatedNetlink();
  net.install(exec);

  if (state?.interfaces) {
    for (const iface of state.interfaces) {
      if (iface.name === "lo") continue;
      net.addDevice(iface.name, "ether", { addresses: iface.addresses.map(withPrefix) });
    }
  } else {
    net.addDevice("eth0", "ether", { addresses: nodeAddresses.map(withPrefix) });
  }
  if (state?.iptablesSave) await seed(exec, "iptablesSave", "iptables-restore", [], state.iptablesSave);
  if (state?.ip6tablesSave) await seed(exec, "ip6tablesSave", "ip6tables-restore", [], state.ip6tablesSave);
  if (state?.ipsetSave) await seed(exec, "ipsetSave", "ipset", ["restore"], state.ipsetSave);
  if (state?.ipvsSave) await seed(exec, "ipvsSave", "ipvsadm", ["--restore"], state.ipvsSave);

  const kernel = createSimulatedKernel({
    version: state?.kernelVersion ?? DEFAULT_KERNEL,
    loaded: state?.modules ?? DEFAULT_MODULES,
    sources: ["simulated host"],
  });
  const recorder = new DryRunRecorder(exec, exec);
  const record = (argv: string[]) => recorder.commands.push({ argv });
  const sysctl = createRecordingSysctl(
    createSimulatedSysctl({ ...DEFAULT_SYSCTLS, ...state?.sysctls }),
    record,
  );
  const hashsize = createRecordingHashsize(createSimulatedConntrackHashsize({ value: 65536 }), record);
  return {
    exec: recorder,
    recorder,
    simulators: { iptables, nft, ipvs, ipset, net },
    kernel,
    sysctl,
    hashsize,
    ipset: createIpsetClient({ exec: recorder }),
  };
}

/** HostState and Node addresses come bare or with a prefix; the simulator wants a prefix. */
function withPrefix(address: string): string {
  if (address.includes("/")) return address;
  return address.includes(":") ? `${address}/64` : `${address}/24`;
}

// iptables mode end to end, on the real kernel: the compiled binary runs as a daemon in the
// node namespace of a netns topology (test/support/netns.ts has the address plan), programs
// iptables from a --state file, and real TCP/UDP traffic from clients, pods and the node
// proves each Service behaviour. State changes are made by rewriting the file. The cases are
// shared with nftables mode (test/support/e2e-service-cases.ts); iptables-save is how rules
// are read back (test/support/e2e-mode-rules.ts).
//
// Run as root (iproute2, iptables, conntrack installed): `node_modules/.bin/bun test test/e2e`
// (or `npm test`, which builds dist/kube-proxy-ts first; a lone run builds it when missing).
// KPTS_E2E_BINARY=/path/to/kube-proxy-ts runs the suite against another build.
import { IPTABLES_RULES } from "../support/e2e-mode-rules.ts";
import { describeServiceSetSwitch, describeServiceTraffic } from "../support/e2e-service-cases.ts";

describeServiceTraffic(IPTABLES_RULES);
describeServiceSetSwitch(IPTABLES_RULES);

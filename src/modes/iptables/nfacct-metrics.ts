// The two nfacct-backed counters of iptables mode, read when /metrics is scraped (upstream's
// nfacctMetricCollector, registered in iptables mode only). Each reports the packet count of
// its nfacct object as a counter; when the object is missing or cannot be read, the family is
// absent from the scrape rather than 0, so a dashboard can tell "no data" from "no packets".

import type { Registry } from "prom-client";
import type { NfacctClient } from "../../host/nfacct/types.ts";
import type { Logger } from "../../log/logger.ts";
import { alpha } from "../../proxy/metrics/metrics.ts";
import { registerCollector } from "../../proxy/metrics/registry.ts";
import { errText } from "../../util/err-text.ts";
import { LOCALHOST_NODEPORTS_COUNTER } from "./service-rules.ts";
import { CT_STATE_INVALID_DROPPED_COUNTER } from "./top-level.ts";

/** Metric name -> nfacct object and help text (upstream's names and help). */
export const NFACCT_METRICS = [
  {
    name: "kubeproxy_iptables_ct_state_invalid_dropped_packets_total",
    counter: CT_STATE_INVALID_DROPPED_COUNTER,
    help: "packets dropped by iptables to work around conntrack problems",
  },
  {
    name: "kubeproxy_iptables_localhost_nodeports_accepted_packets_total",
    counter: LOCALHOST_NODEPORTS_COUNTER,
    help: "Number of packets accepted on nodeports of loopback interface",
  },
] as const;

export function registerNfacctMetrics(
  registry: Registry,
  nfacct: Pick<NfacctClient, "get">,
  logger: Logger,
): void {
  for (const m of NFACCT_METRICS) {
    registerCollector(registry, {
      name: m.name,
      help: alpha(m.help),
      type: "counter",
      collect: async () => {
        const c = await nfacct.get(m.counter);
        return c ? [{ value: c.packets }] : [];
      },
      onError: (err) =>
        logger.error("Failed to collect nfacct counter", {
          counter: m.counter,
          err: errText(err),
        }),
    });
  }
}

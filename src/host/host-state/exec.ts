// Under --dry-run with a HostState, the read-only probes of the host are answered from the
// state document (DESIGN.md: what HostState gives replaces the live probe), so the same plan
// comes out on any machine. Whatever the state omits still goes to the real (read-only) host.

import type { Exec, ExecRequest, ExecResult } from "../../exec/types.ts";
import { parseIptablesSave } from "../iptables/save-parser.ts";
import { ipvsListFromSave } from "../ipvs/format.ts";
import { type HostState, statedIptablesVersion } from "./schema.ts";

const ok = (stdout: string): ExecResult => ({ code: 0, stdout, stderr: "" });
const fail = (code: number, stderr: string): ExecResult => ({ code, stdout: "", stderr });

/** Only the tables asked for with -t, in iptables-save's own format. */
function saveOutput(text: string, args: readonly string[]): string {
  const t = args.indexOf("-t");
  const table = t >= 0 ? args[t + 1] : undefined;
  if (!table) return text;
  const start = text.indexOf(`*${table}\n`);
  if (start < 0) return "";
  const end = text.indexOf("COMMIT\n", start);
  return end < 0 ? text.slice(start) : text.slice(start, end + "COMMIT\n".length);
}

/** -S CHAIN / -C CHAIN ... answered from the saved rules, as the binary would. */
function iptablesQuery(text: string, args: readonly string[]): ExecResult | undefined {
  const t = args.indexOf("-t");
  const table = (t >= 0 ? args[t + 1] : undefined) ?? "filter";
  const chains = parseIptablesSave(text).get(table)?.chains;
  const s = args.indexOf("-S");
  if (s >= 0) {
    const chain = chains?.get(args[s + 1] ?? "");
    return chain ? ok(chain.rules.join("\n")) : fail(1, "iptables: No chain/target/match by that name.\n");
  }
  const c = args.indexOf("-C");
  if (c >= 0) {
    const name = args[c + 1] ?? "";
    const chain = chains?.get(name);
    if (!chain) return fail(1, "iptables: No chain/target/match by that name.\n");
    // The rule spec follows the chain name, minus the "-t TABLE" the client puts there.
    const spec = args.filter((_, i) => i > c + 1 && i !== t && i !== t + 1);
    const wanted = `-A ${name} ${spec.join(" ")}`;
    return chain.rules.some((r) => r.replaceAll('"', "") === wanted)
      ? ok("")
      : fail(1, "iptables: Bad rule.\n");
  }
  return undefined;
}

function interfacesOutput(state: HostState): string {
  return (state.interfaces ?? [])
    .flatMap((iface, i) =>
      iface.addresses.map(
        (a) =>
          `${i + 1}: ${iface.name}    ${a.includes(":") ? "inet6" : "inet"} ${a} scope global ${iface.name}`,
      ),
    )
    .join("\n");
}

export function hostStateExec(state: HostState, inner: Exec): Exec {
  const stated = state.iptablesVersion ? statedIptablesVersion(state.iptablesVersion) : undefined;
  const backend = stated?.mode === "legacy" ? "legacy" : "nft";
  const answer = (req: ExecRequest): ExecResult | undefined => {
    const tool = /^(ip6?tables)(?:-(legacy|nft))?(-save)?$/.exec(req.cmd);
    if (tool) {
      if (!tool[3] && req.args.includes("--version") && stated) {
        // Printed the way the tool prints it, whichever form the state used.
        const mode = stated.mode ? ` (${stated.mode})` : "";
        return ok(`${tool[1] ?? "iptables"} v${stated.version}${mode}\n`);
      }
      const text = tool[1] === "ip6tables" ? state.ip6tablesSave : state.iptablesSave;
      if (text === undefined) return undefined;
      // The state describes one backend; the other one is empty on that host.
      const mine = tool[2] === undefined || tool[2] === backend;
      if (tool[3]) return ok(mine ? saveOutput(text, req.args) : "");
      return mine ? iptablesQuery(text, req.args) : undefined;
    }
    if (req.cmd === "ipset" && state.ipsetSave !== undefined) {
      if (req.args[0] === "save") return ok(state.ipsetSave);
      if (req.args[0] === "list" && req.args.includes("-n")) {
        const names = state.ipsetSave.split("\n").filter((l) => l.startsWith("create "));
        return ok(names.map((l) => l.split(" ")[1]).join("\n"));
      }
    }
    if (req.cmd === "ipvsadm" && state.ipvsSave !== undefined) {
      if (req.args.includes("-S")) return ok(state.ipvsSave);
      if (req.args.includes("-L")) return ok(ipvsListFromSave(state.ipvsSave));
    }
    if (req.cmd === "ip" && state.interfaces && req.args.join(" ") === "-o addr show")
      return ok(interfacesOutput(state));
    if (
      req.cmd === "nft" &&
      state.nftVersion !== undefined &&
      req.args.length === 1 &&
      req.args[0] === "--version"
    )
      return ok(`nftables v${state.nftVersion.replace(/^v/, "")} (stated)\n`);
    if (req.cmd === "nfacct" && state.nfacct !== undefined && req.args[0] === "list") {
      return state.nfacct ? ok("") : fail(1, "nfacct: netlink error: Operation not supported\n");
    }
    return undefined;
  };
  return { run: async (req) => answer(req) ?? inner.run(req) };
}

// Renders one service port: plans it, writes its top-level rules (kept as text for reuse by
// later partial syncs; a port of thousands of them keeps what writes them instead), declares
// its own chains and defers their rules to the sync's output, in upstream's order (the port's
// KUBE-SERVICES/KUBE-NODEPORTS lines first, then its chains). The chain rules are most of a big
// payload: made only when the restore reads them, they never exist all at once.

import type { FamilyServicePort } from "../../proxy/family-view.ts";
import type { TopologyContext } from "../../proxy/topology.ts";
import type { DeferredLines, LineSink } from "./line-blocks.ts";
import { LINES_PER_TEXT, PortLines } from "./port-lines.ts";
import type { ServicePortNames } from "./port-names.ts";
import { type NatText, type PortInputs, type PortState, portExtras } from "./port-state.ts";
import {
  type ChainRuleSettings,
  serviceChainNames,
  serviceChainRuleCount,
  serviceChainRuleSteps,
  writeServiceChainRules,
} from "./service-chains.ts";
import { planServicePort, type ServicePlan } from "./service-plan.ts";
import { type EntryRuleSettings, writeEntryRules } from "./service-rules.ts";

/** Where a sync's lines go; entries may hold several joined lines (counted in *ExtraLines). */
export interface RenderOutput {
  readonly filterRules: LineSink;
  /** Names of the nat chains declared. */
  readonly natChains: LineSink;
  readonly natRules: LineSink & { defer(lines: DeferredLines): void };
  filterExtraLines: number;
  natExtraLines: number;
}

/**
 * A port's chain rules until the restore reads them: what they are written from, in one object
 * (a closure would also hold its scope, ~100 bytes more a port: 10 MiB for 100,000 ports).
 */
class DeferredChainRules implements DeferredLines {
  constructor(
    readonly lines: number,
    protected readonly view: FamilyServicePort,
    protected readonly names: ServicePortNames,
    protected readonly plan: ServicePlan,
    protected readonly settings: ChainRuleSettings,
  ) {}

  write(sink: LineSink): void {
    writeServiceChainRules(this.view, this.names, this.plan, this.settings, sink);
  }
}

/** A port whose firewall chain lists more source ranges than one entry holds: read in steps. */
class SteppedChainRules extends DeferredChainRules {
  steps(sink: LineSink): Iterable<number> {
    return serviceChainRuleSteps(this.view, this.names, this.plan, this.settings, sink);
  }
}

// Each port's top-level lines, kept as one flat text until the port changes.
const scratchFilter = new PortLines();
// Handed to the port's state, and replaced, when its lines are too many to keep as text.
let scratchNat = new PortLines();

export function renderPort(
  inputs: PortInputs,
  topology: TopologyContext,
  entrySettings: EntryRuleSettings,
  chainSettings: ChainRuleSettings,
  out: RenderOutput,
): PortState {
  const { view, names } = inputs;
  const plan = planServicePort(view, inputs.endpoints, names, topology);
  scratchFilter.clear();
  scratchNat.clear();
  writeEntryRules(view, names, plan, entrySettings, { filter: scratchFilter, nat: scratchNat });
  const filterText = scratchFilter.text();
  const filterLines = scratchFilter.lines;
  const natLines = scratchNat.lines;
  let natText: NatText;
  if (natLines > LINES_PER_TEXT) {
    // Written each time a restore reads it, in steps, never kept as text (13 MB at 100,000).
    natText = scratchNat;
    scratchNat = new PortLines();
    out.natRules.defer(natText);
  } else {
    natText = scratchNat.text();
    if (natLines > 0) {
      out.natRules.push(natText);
      out.natExtraLines += natLines - 1;
    }
  }
  scratchFilter.clear();
  scratchNat.clear();
  if (filterLines > 0) {
    out.filterRules.push(filterText);
    out.filterExtraLines += filterLines - 1;
  }
  const activeChains = serviceChainNames(names, plan);
  for (const chain of activeChains) out.natChains.push(chain);
  const chainRuleLines = serviceChainRuleCount(view, plan, chainSettings);
  // A port with no chain rules (no endpoints, say) holds nothing until the restore.
  if (chainRuleLines > 0) {
    const stepped = plan.usesFirewallChain && view.loadBalancerSourceRanges.length > LINES_PER_TEXT;
    const Rules = stepped ? SteppedChainRules : DeferredChainRules;
    out.natRules.defer(new Rules(chainRuleLines, view, names, plan, chainSettings));
  }
  // Made by spreading what is kept of the inputs: JSC lays such an object out tighter than a
  // literal of the same fields (~136 against ~168 bytes), and there is one per service port.
  const { view: _view, endpoints: _endpoints, ...kept } = inputs;
  return {
    ...kept,
    natText,
    natLines,
    chainRuleLines,
    activeChains,
    extras: portExtras({
      filterText,
      filterLines,
      noLocalInternal: plan.internalFilter?.target === "DROP",
      noLocalExternal: plan.externalFilter?.target === "DROP",
    }),
  };
}

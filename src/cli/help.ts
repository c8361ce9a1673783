// --help text and the README flag reference, both generated from the flag table so they can
// never drift from what the parser accepts.

import { formatGoDuration } from "../config/duration.ts";
import {
  type FeatureGateName,
  GATE_EFFECTS,
  KNOWN_FEATURE_GATES,
  knownFeatureGateLines,
} from "../config/feature-gates.ts";
import { FLAGS } from "./flags.ts";
import type { FlagGroup, FlagSpec } from "./types.ts";

const WIDTH = 100;
const GROUP_ORDER: readonly FlagGroup[] = [
  "General",
  "API server",
  "Node and servers",
  "Proxy mode",
  "iptables",
  "ipvs",
  "Local traffic detection",
  "conntrack",
  "Logging",
  "kube-proxy-ts",
  "Deprecated",
];

const INTRO =
  "kube-proxy-ts is the Kubernetes network proxy in TypeScript. It watches Services, " +
  "EndpointSlices and its own Node, and programs iptables or IPVS on this node so that " +
  "Service addresses reach the right Pods. Flags, config file and defaults match kube-proxy v1.37.";

const PRECEDENCE =
  "Settings come from three layers: built-in defaults, then the --config file, then flags given " +
  "explicitly on the command line. Unlike upstream kube-proxy, which ignores most flags once " +
  "--config is set, an explicit flag here always wins; every flag that replaces a value from " +
  "the file is logged at startup.";

/**
 * The default as a person would type it. Like pflag, --help leaves out zero values (false, 0,
 * 0s); the README passes showZero to list them too.
 */
export function formatDefault(spec: FlagSpec, showZero = false): string {
  const value = spec.default;
  switch (spec.kind) {
    case "bool":
      return value === true || showZero ? String(value) : "";
    case "duration":
      return value === 0 && !showZero ? "" : formatGoDuration(value as number);
    case "int":
    case "float":
      return value === 0 && !showZero ? "" : String(value);
    case "stringSlice":
    case "stringArray":
    case "cidrList":
      return Array.isArray(value) && value.length > 0 ? value.join(",") : "";
    case "map":
      return "";
    case "string":
      return value === "" || spec.noOptValue !== undefined ? "" : String(value);
  }
}

/**
 * Only the canonical name: the aliases (--mode, --port-range) are ours, so --help stays the list
 * of upstream's flags plus the kube-proxy-ts ones; the README lists the aliases.
 */
function flagLabel(spec: FlagSpec): string {
  const short = spec.shorthand ? `-${spec.shorthand}, ` : "    ";
  return `  ${short}--${spec.name}${spec.typeName ? ` ${spec.typeName}` : ""}`;
}

/** Lines printed under a flag's description, unwrapped (the gate list, as upstream prints it). */
function helpExtra(spec: FlagSpec): string[] {
  return spec.config === "featureGates" ? ["Options are:", ...knownFeatureGateLines()] : [];
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "") lines.push(line);
  return lines;
}

function helpBody(spec: FlagSpec): string {
  const def = formatDefault(spec);
  const shown = spec.kind === "string" && def !== "" ? JSON.stringify(def) : def;
  return `${spec.help}${shown === "" ? "" : ` (default ${shown})`}`;
}

function groups(includeHidden: boolean): [FlagGroup, FlagSpec[]][] {
  return GROUP_ORDER.map((group): [FlagGroup, FlagSpec[]] => [
    group,
    FLAGS.filter((spec) => spec.group === group && (includeHidden || !spec.hidden)),
  ]).filter(([, specs]) => specs.length > 0);
}

/** The text printed by --help: every flag that is not hidden, grouped, with type and default. */
export function renderHelp(): string {
  const out: string[] = [
    ...wrap(INTRO, WIDTH),
    "",
    "Usage:",
    "  kube-proxy-ts [flags]",
    "  kube-proxy-ts explain IP:port[/tcp|udp|sctp] [--from IP] [flags]",
    "",
    "Precedence:",
  ];
  out.push(...wrap(PRECEDENCE, WIDTH - 2).map((l) => `  ${l}`), "");
  const visible = FLAGS.filter((spec) => !spec.hidden);
  const column = Math.min(48, Math.max(...visible.map((spec) => flagLabel(spec).length)) + 3);
  for (const [group, specs] of groups(false)) {
    out.push(`${group} flags:`);
    for (const spec of specs) {
      const label = flagLabel(spec);
      const body = wrap(helpBody(spec), WIDTH - column);
      if (label.length + 2 > column) {
        out.push(label);
        out.push(...body.map((l) => `${" ".repeat(column)}${l}`));
      } else {
        out.push(`${label.padEnd(column)}${body[0] ?? ""}`);
        out.push(...body.slice(1).map((l) => `${" ".repeat(column)}${l}`));
      }
      out.push(...helpExtra(spec).map((l) => `${" ".repeat(column)}${l}`));
    }
    out.push("");
  }
  return `${out.join("\n").trimEnd()}\n`;
}

function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}

function configCell(spec: FlagSpec): string {
  if (spec.config === "runOption") return "(run option)";
  return spec.portOf ? `port of \`${spec.config}\`` : `\`${spec.config}\``;
}

function featureGateSection(): string[] {
  const row = (name: FeatureGateName, effect: string) => {
    const spec = KNOWN_FEATURE_GATES.get(name);
    return `| \`${name}\` | ${spec?.stage ?? ""} | \`${spec?.default ?? ""}\` | ${cell(effect)} |`;
  };
  return [
    "### Feature gates",
    "",
    `\`--feature-gates\` and \`featureGates\` accept exactly the ${KNOWN_FEATURE_GATES.size} gates ` +
      "kube-proxy v1.37 registers (`--help` lists the alpha and beta ones). An unknown name, or a locked " +
      "GA gate set against its lock, is an error (exit 1); setting a GA or deprecated gate logs a warning. " +
      "A gate's value is its explicit setting, else AllAlpha/AllBeta for its stage when set, else its default. " +
      "These change what kube-proxy-ts does:",
    "",
    "| Gate | Stage | Default | Effect |",
    "| --- | --- | --- | --- |",
    ...GATE_EFFECTS.map((g) => row(g.name, g.effect)),
    "",
  ];
}

/** Markdown reference of every flag plus short feature-gate and config-file sections, for the README. */
export function renderFlagReferenceMarkdown(): string {
  const ours = FLAGS.filter((spec) => spec.group === "kube-proxy-ts").map((spec) => `\`--${spec.name}\``);
  const out: string[] = [
    "### Flags",
    "",
    "Generated from `src/cli/flags.ts`. Durations use Go syntax (`500ms`, `30s`, `1m30s`, `2h45m`).",
    "",
    "Every flag matches upstream kube-proxy v1.37 (name, type, default) except the kube-proxy-ts " +
      `ones (${ours.join(", ")}); \`--mode\` and \`--port-range\` are extra ` +
      "spellings of `--proxy-mode` and `--proxy-port-range` that `--help` does not list.",
    "",
  ];
  for (const [group, specs] of groups(true)) {
    out.push(
      `#### ${group}`,
      "",
      "| Flag | Type | Default | Config field | Description |",
      "| --- | --- | --- | --- | --- |",
    );
    for (const spec of specs) {
      const names = [
        ...(spec.shorthand ? [`-${spec.shorthand}`] : []),
        ...[spec.name, ...spec.aliases].map((n) => `--${n}`),
      ]
        .map((n) => `\`${n}\``)
        .join(", ");
      const def = formatDefault(spec, true);
      const notes = [
        spec.help,
        ...(spec.deprecated ? [`Deprecated: ${spec.deprecated}.`] : []),
        ...(spec.hidden ? ["Hidden from `--help`."] : []),
      ].join(" ");
      out.push(
        `| ${names} | ${cell(spec.typeName || "bool")} | ${def === "" ? "" : `\`${cell(def)}\``} | ${configCell(spec)} | ${cell(notes)} |`,
      );
    }
    out.push("");
  }
  out.push(...featureGateSection());
  out.push(
    "### Config file",
    "",
    "`--config FILE` reads a `KubeProxyConfiguration` of `kubeproxy.config.k8s.io/v1alpha1`, in YAML or JSON, " +
      "exactly as upstream kube-proxy does. Unknown fields are errors. Durations are Go duration strings. " +
      "`--write-config-to FILE` writes the effective configuration in the same format.",
    "",
    "```yaml",
    "apiVersion: kubeproxy.config.k8s.io/v1alpha1",
    "kind: KubeProxyConfiguration",
    "mode: ipvs",
    "clusterCIDR: 192.0.2.0/24,2001:db8:42::/56",
    "ipvs:",
    "  scheduler: rr",
    "  syncPeriod: 30s",
    "nodePortAddresses: [198.51.100.0/24]",
    "```",
    "",
    `**Precedence.** ${PRECEDENCE}`,
    "",
    "Every problem in the flags and the file is reported at once, one line each, naming the field, " +
      "the value and the flag or file line it came from.",
  );
  return `${out.join("\n")}\n`;
}

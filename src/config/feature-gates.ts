// The feature gates kube-proxy v1.31 knows, and what a `featureGates` map (flag or file) makes of
// them: which names are errors, which settings only warn, and each gate's effective value.
//
// Where the list comes from: upstream kube-proxy registers into one gate set every Kubernetes
// gate (pkg/features/kube_features.go), the generic apiserver's (staging/src/k8s.io/apiserver/
// pkg/features), the two apiextensions ones it relists, client-go's (client-go/features), and
// component-base's logging (logs/api/v1/kube_features.go) and metrics (metrics/features) gates,
// plus the special AllAlpha/AllBeta. The names, defaults and stages below were read from the
// kubernetes/kubernetes sources of the 1.31 cycle: a late-1.31 pkg/features map, corrected by the
// per-version history that 1.32/1.33 record for each gate (evaluated at 1.31: e.g. the 1.31
// release turned DisableNodeKubeProxyVersion into a deprecated gate, made ConsistentListFromCache
// beta, kept LocalStorageCapacityIsolationFSQuotaMonitoring and ProcMountType off, renamed
// DisableKubeletCSRAdmissionValidation to AllowInsecureKubeletCertificateSigningRequests, and
// dropped KubeletEnsureSecretPulledImages again). A gate missing here is rejected, as upstream
// rejects an unknown one; a GA gate removed after 1.31 is still accepted (it is locked).

export type FeatureStage = "ALPHA" | "BETA" | "GA" | "DEPRECATED";

export interface FeatureSpec {
  readonly default: boolean;
  readonly stage: FeatureStage;
  /** Locked gates accept only their default (upstream's LockToDefault). */
  readonly locked: boolean;
}

/** Gates that switch every unset alpha (AllAlpha) or beta (AllBeta) gate at once. */
const SPECIAL = ["AllAlpha", "AllBeta"] as const;

const ALPHA_OFF = [
  "APIServingWithRoutine",
  "AnonymousAuthConfigurableEndpoints",
  "AuthorizeNodeWithSelectors",
  "AuthorizeWithSelectors",
  "CPUManagerPolicyAlphaOptions",
  "CSIVolumeHealth",
  "CloudControllerManagerWebhook",
  "ClusterTrustBundle",
  "ClusterTrustBundleProjection",
  "CoordinatedLeaderElection",
  "CrossNamespaceVolumeDataSource",
  "CustomCPUCFSQuotaPeriod",
  "DRAControlPlaneController",
  "DisableAllocatorDualWrite",
  "DynamicResourceAllocation",
  "EventedPLEG",
  "HPAScaleToZero",
  "ImageVolume",
  "InPlacePodVerticalScaling",
  "InTreePluginPortworxUnregister",
  "InformerResourceVersion",
  "JobManagedBy",
  "KubeletInUserNamespace",
  "KubeletPodResourcesDynamicResources",
  "KubeletPodResourcesGet",
  "LoggingAlphaOptions",
  "MaxUnavailableStatefulSet",
  "MemoryQoS",
  "MutatingAdmissionPolicy",
  "PodAndContainerStatsFromCRI",
  "QOSReserved",
  "RecoverVolumeExpansionFailure",
  "RelaxedEnvironmentVariableValidation",
  "ResourceHealthStatus",
  "RuntimeClassInImageCriApi",
  "SELinuxMount",
  "StorageVersionAPI",
  "StorageVersionMigrator",
  "SupplementalGroupsPolicy",
  "TopologyManagerPolicyAlphaOptions",
  "UnknownVersionInteroperabilityProxy",
  "UserNamespacesPodSecurityStandards",
  "VolumeCapacityPriority",
  "WatchList",
  "WinDSR",
] as const;

const ALPHA_ON = ["WindowsHostNetwork"] as const;

const BETA_ON = [
  "APIResponseCompression",
  "APIServerIdentity",
  "APIServerTracing",
  "AnyVolumeDataSource",
  "CPUManagerPolicyBetaOptions",
  "CPUManagerPolicyOptions",
  "CRDValidationRatcheting",
  "CSIMigrationPortworx",
  "ComponentSLIs",
  "ConsistentListFromCache",
  "ContainerCheckpoint",
  "ContextualLogging",
  "CronJobsScheduledAnnotation",
  "CustomResourceFieldSelectors",
  "GracefulNodeShutdown",
  "GracefulNodeShutdownBasedOnPodPriority",
  "HonorPVReclaimPolicy",
  "ImageMaximumGCAge",
  "JobBackoffLimitPerIndex",
  "JobPodReplacementPolicy",
  "JobSuccessPolicy",
  "KubeletCgroupDriverFromCRI",
  "KubeletSeparateDiskGC",
  "KubeletTracing",
  "LoadBalancerIPMode",
  "LoggingBetaOptions",
  "MatchLabelKeysInPodAffinity",
  "MatchLabelKeysInPodTopologySpread",
  "MemoryManager",
  "NFTablesProxyMode",
  "NodeInclusionPolicyInPodTopologySpread",
  "NodeSwap",
  "OpenAPIEnums",
  "PodDeletionCost",
  "PodIndexLabel",
  "PodLifecycleSleepAction",
  "PodReadyToStartContainersCondition",
  "PortForwardWebsockets",
  "RecursiveReadOnlyMounts",
  "ReloadKubeletServerCertificateFile",
  "ResilientWatchCacheInitialization",
  "RetryGenerateName",
  "RotateKubeletServerCertificate",
  "SELinuxMountReadWriteOncePod",
  "SeparateCacheWatchRPC",
  "SeparateTaintEvictionController",
  "ServiceAccountTokenJTI",
  "ServiceAccountTokenNodeBinding",
  "ServiceAccountTokenNodeBindingValidation",
  "ServiceAccountTokenPodNodeInfo",
  "ServiceTrafficDistribution",
  "SidecarContainers",
  "SizeMemoryBackedVolumes",
  "StatefulSetAutoDeletePVC",
  "StorageNamespaceIndex",
  "StorageVersionHash",
  "StructuredAuthenticationConfiguration",
  "StructuredAuthorizationConfiguration",
  "TopologyAwareHints",
  "TopologyManagerPolicyBetaOptions",
  "TopologyManagerPolicyOptions",
  "TranslateStreamCloseWebsocketRequests",
  "UnauthenticatedHTTP2DOSMitigation",
  "WinOverlay",
] as const;

const BETA_OFF = [
  "ConcurrentWatchObjectDecode",
  "LocalStorageCapacityIsolationFSQuotaMonitoring",
  "MultiCIDRServiceAllocator",
  "NodeLogQuery",
  "ProcMountType",
  "SchedulerQueueingHints",
  "StrictCostEnforcementForVAP",
  "StrictCostEnforcementForWebhooks",
  "UserNamespacesSupport",
  "VolumeAttributesClass",
  "WatchCacheInitializationPostStartHook",
  "WatchFromStorageWithoutResourceVersion",
  "WatchListClient",
] as const;

/** GA and locked to true: setting false is an error, setting true only warns. */
const GA_LOCKED = [
  "APIListChunking",
  "AdmissionWebhookMatchConditions",
  "AggregatedDiscoveryEndpoint",
  "AppArmor",
  "AppArmorFields",
  "CPUManager",
  "CloudDualStackNodeIPs",
  "DevicePluginCDIDevices",
  "DisableCloudProviders",
  "DisableKubeletCloudCredentialProviders",
  "EfficientWatchResumption",
  "ElasticIndexedJob",
  "HPAContainerMetrics",
  "JobPodFailurePolicy",
  "KMSv2",
  "KMSv2KDF",
  "KubeProxyDrainingTerminatingNodes",
  "LegacyServiceAccountTokenCleanUp",
  "LogarithmicScaleDown",
  "MinDomainsInPodTopologySpread",
  "NewVolumeManagerReconstruction",
  "NodeOutOfServiceVolumeDetach",
  "PDBUnhealthyPodEvictionPolicy",
  "PersistentVolumeLastPhaseTransitionTime",
  "PodDisruptionConditions",
  "PodHostIPs",
  "PodSchedulingReadiness",
  "RemainingItemCount",
  "ServerSideApply",
  "ServerSideFieldValidation",
  "StableLoadBalancerNodeSet",
  "StatefulSetStartOrdinal",
  "ValidatingAdmissionPolicy",
  "WatchBookmark",
  "ZeroLimitedNominalConcurrencyShares",
] as const;

/** GA but not locked (upstream never locked it): settable either way, with a warning. */
const GA_OPEN = ["ExecProbeTimeout"] as const;

const DEPRECATED_OFF = [
  "AllowDNSOnlyNodeCSR",
  "AllowInsecureKubeletCertificateSigningRequests",
  "AllowServiceLBStatusOnNonLB",
  "DisableNodeKubeProxyVersion",
  "KMSv1",
] as const;

/** Every gate name kube-proxy v1.31 accepts. */
export type FeatureGateName =
  | (typeof SPECIAL)[number]
  | (typeof ALPHA_OFF)[number]
  | (typeof ALPHA_ON)[number]
  | (typeof BETA_ON)[number]
  | (typeof BETA_OFF)[number]
  | (typeof GA_LOCKED)[number]
  | (typeof GA_OPEN)[number]
  | (typeof DEPRECATED_OFF)[number];

function entries(names: readonly FeatureGateName[], spec: FeatureSpec): [FeatureGateName, FeatureSpec][] {
  return names.map((name) => [name, spec]);
}

/** The v1.31 gate table: name -> default, stage, locked. */
export const KNOWN_FEATURE_GATES: ReadonlyMap<FeatureGateName, FeatureSpec> = new Map([
  ["AllAlpha", { default: false, stage: "ALPHA", locked: false }],
  ["AllBeta", { default: false, stage: "BETA", locked: false }],
  ...entries(ALPHA_OFF, { default: false, stage: "ALPHA", locked: false }),
  ...entries(ALPHA_ON, { default: true, stage: "ALPHA", locked: false }),
  ...entries(BETA_ON, { default: true, stage: "BETA", locked: false }),
  ...entries(BETA_OFF, { default: false, stage: "BETA", locked: false }),
  ...entries(GA_LOCKED, { default: true, stage: "GA", locked: true }),
  ...entries(GA_OPEN, { default: true, stage: "GA", locked: false }),
  ...entries(DEPRECATED_OFF, { default: false, stage: "DEPRECATED", locked: false }),
]);

export function isKnownFeatureGate(name: string): name is FeatureGateName {
  return KNOWN_FEATURE_GATES.has(name as FeatureGateName);
}

function isSpecial(name: string): boolean {
  return (SPECIAL as readonly string[]).includes(name);
}

/** A problem with one `featureGates` entry; `name` is the key as given. */
export interface FeatureGateProblem {
  readonly name: string;
  readonly value: boolean;
  readonly message: string;
}

/**
 * What upstream refuses: an unknown name, or a locked gate set against its lock. Upstream stops
 * at the first unknown name; every problem is listed here, like every other config problem.
 */
export function featureGateProblems(explicit: Readonly<Record<string, boolean>>): FeatureGateProblem[] {
  const out: FeatureGateProblem[] = [];
  for (const [name, value] of Object.entries(explicit)) {
    const spec = isKnownFeatureGate(name) ? KNOWN_FEATURE_GATES.get(name) : undefined;
    if (!spec) out.push({ name, value, message: `unrecognized feature gate: ${name}` });
    else if (spec.locked && value !== spec.default) {
      out.push({
        name,
        value,
        message: `cannot set feature gate ${name} to ${value}, feature is locked to ${spec.default}`,
      });
    }
  }
  return out;
}

/** The warnings upstream logs for accepted settings of GA and deprecated gates. */
export function featureGateWarnings(explicit: Readonly<Record<string, boolean>>): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(explicit)) {
    const spec = isKnownFeatureGate(name) ? KNOWN_FEATURE_GATES.get(name) : undefined;
    if (!spec || isSpecial(name) || (spec.locked && value !== spec.default)) continue;
    if (spec.stage === "DEPRECATED" || spec.stage === "GA") {
      const kind = spec.stage === "GA" ? "GA" : "deprecated";
      out.push(`Setting ${kind} feature gate ${name}=${value}. It will be removed in a future release.`);
    }
  }
  return out;
}

/** Each gate's value for this run, asked for by name; computed once from the explicit settings. */
export interface EffectiveFeatureGates {
  enabled(name: FeatureGateName): boolean;
  /** The settings it was built from (unknown names included), for reports such as /configz. */
  readonly explicit: Readonly<Record<string, boolean>>;
}

/**
 * Effective value = the explicit setting; else, for an alpha (beta) gate, AllAlpha (AllBeta) when
 * that was set; else the default. Unknown names are ignored here (validation rejects them).
 */
export function effectiveFeatureGates(explicit: Readonly<Record<string, boolean>>): EffectiveFeatureGates {
  const values = new Map<FeatureGateName, boolean>();
  const allAlpha = explicit.AllAlpha;
  const allBeta = explicit.AllBeta;
  for (const [name, spec] of KNOWN_FEATURE_GATES) {
    let value = spec.default;
    if (spec.stage === "ALPHA" && allAlpha !== undefined && !isSpecial(name)) value = allAlpha;
    if (spec.stage === "BETA" && allBeta !== undefined && !isSpecial(name)) value = allBeta;
    const set = explicit[name];
    values.set(name, set ?? value);
  }
  return {
    enabled: (name) => values.get(name) ?? false,
    explicit: { ...explicit },
  };
}

/** Shorthand for `gates.enabled(name)`, for call sites that read better as a function. */
export function featureEnabled(gates: EffectiveFeatureGates, name: FeatureGateName): boolean {
  return gates.enabled(name);
}

/** Every gate at its v1.31 default (nothing set). */
export const DEFAULT_FEATURE_GATES: EffectiveFeatureGates = effectiveFeatureGates({});

/**
 * The gate list as upstream's --feature-gates help prints it: "Name=true|false (STAGE -
 * default=X)", sorted, without GA and deprecated gates.
 */
export function knownFeatureGateLines(): string[] {
  const lines: string[] = [];
  for (const [name, spec] of KNOWN_FEATURE_GATES) {
    if (spec.stage === "GA" || spec.stage === "DEPRECATED") continue;
    lines.push(`${name}=true|false (${spec.stage} - default=${spec.default})`);
  }
  return lines.sort();
}

/** The gates whose value changes what kube-proxy-ts does (the README's table is built from this). */
export const GATE_EFFECTS: readonly { readonly name: FeatureGateName; readonly effect: string }[] = [
  {
    name: "TopologyAwareHints",
    effect:
      "With ServiceTrafficDistribution off: zone hints are honoured for Services with the topology-mode annotation. Both off: hints are ignored.",
  },
  {
    name: "ServiceTrafficDistribution",
    effect:
      "Zone hints are honoured whatever the annotation says (this is how trafficDistribution: PreferClose reaches the node).",
  },
  {
    name: "LoadBalancerIPMode",
    effect:
      "LoadBalancer ingress IPs with ipMode Proxy are not programmed. Off: every ingress IP is programmed.",
  },
  {
    name: "NFTablesProxyMode",
    effect:
      'Off: mode "nftables" is rejected as unknown, and starts in the other modes leave nftables mode\'s tables alone. On: nftables mode runs.',
  },
  {
    name: "LoggingAlphaOptions",
    effect: "Allows the --log-*-split-stream and --log-*-info-buffer-size options.",
  },
  { name: "LoggingBetaOptions", effect: "Allows --logging-format=json." },
  { name: "AllAlpha", effect: "Sets every alpha gate not set by name." },
  { name: "AllBeta", effect: "Sets every beta gate not set by name (including the beta gates above)." },
];

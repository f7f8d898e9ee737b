// The shape of a fleet's Kubernetes workload, as its class's DataPlaneProxy gives it (spec.kubernetes): checked
// by the translator, rendered by src/infra/kubernetes. Parts Portico only passes through stay plain JSON in
// Kubernetes' own field names.

/** Kubernetes JSON handed on as written (a toleration, an affinity, an HPA metric). */
export type KubeJson = { readonly [field: string]: unknown };

/** How long a proxy's preStop hook may drain (the proxy's --max-drain-seconds) when its DataPlaneProxy says not. */
export const PROXY_MAX_DRAIN_SECONDS = 60;
/** After the drain: the proxy and its sidecar exit on SIGTERM. A grace period must leave this much too. */
export const PROXY_EXIT_SECONDS = 10;
/** The grace period when the DataPlaneProxy sets none: the drain and 30 s for shutdown. */
export function defaultTerminationGraceSeconds(drainSeconds = PROXY_MAX_DRAIN_SECONDS): number {
  return drainSeconds + 30;
}

export type IntOrPercent = number | string;

export interface FleetShape {
  /** Replicas (absent: 1, or the autoscaler's when one is set) and the rollout strategy. */
  deployment?: { replicas?: number; strategy?: KubeJson };
  /** One proxy per node instead of a Deployment. */
  daemonSet?: { updateStrategy?: KubeJson };
  horizontalPodAutoscaler?: {
    minReplicas?: number;
    maxReplicas: number;
    metrics?: KubeJson[];
    behavior?: KubeJson;
  };
  podDisruptionBudget?: {
    minAvailable?: IntOrPercent;
    maxUnavailable?: IntOrPercent;
    unhealthyPodEvictionPolicy?: string;
  };
  pod?: {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    nodeSelector?: Record<string, string>;
    tolerations?: KubeJson[];
    affinity?: KubeJson;
    topologySpreadConstraints?: KubeJson[];
    priorityClassName?: string;
    /** Merged over Portico's own, field by field; the translator refuses what would weaken it. */
    securityContext?: KubeJson;
    imagePullSecrets?: { name: string }[];
    terminationGracePeriodSeconds?: number;
  };
  /** The proxy container (not the shutdown-manager sidecar). */
  container?: {
    /** Replaces the default requests whole, as in a pasted container. */
    resources?: KubeJson;
    /** After Portico's own variables (POD_NAME, POD_NAMESPACE), which they may not redefine. */
    env?: KubeJson[];
    /** Merged over Portico's own, field by field; the translator refuses what would weaken it. */
    securityContext?: KubeJson;
  };
  service?: {
    type?: 'LoadBalancer' | 'NodePort' | 'ClusterIP';
    annotations?: Record<string, string>;
    externalTrafficPolicy?: 'Cluster' | 'Local';
    loadBalancerClass?: string;
    loadBalancerSourceRanges?: string[];
    allocateLoadBalancerNodePorts?: boolean;
  };
}

/** Environment variables Portico sets in the proxy container itself. */
export const RESERVED_PROXY_ENV: readonly string[] = ['POD_NAME', 'POD_NAMESPACE'];

// What a DataPlaneProxy may not do to the proxy's pod, in one place: the translator refuses a shape that tries
// (naming the field), and the renderer takes from a shape only what passes, so neither alone is the only guard.
// Portico's own pod is Pod Security `restricted` (non-root, no privilege escalation, ALL capabilities dropped, a
// read-only root, RuntimeDefault seccomp); a shape may choose ids and add restrictions, never take one away.

/** The one capability Pod Security `restricted` lets a container add. */
export const ADDABLE_CAPABILITY = 'NET_BIND_SERVICE';

/** SELinux types Pod Security admits for a container (`spc_t` and the like run it unconfined). */
export const CONTAINER_SELINUX_TYPES: readonly string[] = [
  'container_t',
  'container_init_t',
  'container_kvm_t',
  'container_engine_t',
];

/** The sysctls Pod Security `baseline` calls safe: namespaced, and nothing another pod or the node sees. */
export const SAFE_SYSCTLS: ReadonlySet<string> = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);

/** Annotations that set a pod's or container's AppArmor or seccomp profile the old way, around its fields. */
const SECURITY_ANNOTATION_PREFIXES: readonly string[] = [
  'container.apparmor.security.beta.kubernetes.io/',
  'seccomp.security.alpha.kubernetes.io/',
  'container.seccomp.security.alpha.kubernetes.io/',
];

export function isSecurityAnnotation(key: string): boolean {
  return SECURITY_ANNOTATION_PREFIXES.some((prefix) => key.startsWith(prefix));
}

function json(value: unknown): KubeJson | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as KubeJson)
    : undefined;
}

/** The field of SELinux options that would loosen the container's confinement, if any. */
function seLinuxWeakening(options: KubeJson): string | undefined {
  if (options.user !== undefined) return 'seLinuxOptions.user';
  if (options.role !== undefined) return 'seLinuxOptions.role';
  const type = options.type;
  if (type !== undefined && !CONTAINER_SELINUX_TYPES.includes(String(type))) return 'seLinuxOptions.type';
  return undefined;
}

/**
 * The first field of a (pod or container) security context that would make the proxy's pod weaker than
 * Portico's own, as a path below the context; undefined when it has none. A profile must be RuntimeDefault: a
 * node's Localhost profile may allow anything, and Portico cannot tell.
 */
export function weakeningField(s: KubeJson): string | undefined {
  const checks: [string, boolean][] = [
    ['runAsNonRoot', s.runAsNonRoot === false],
    ['runAsUser', s.runAsUser === 0],
    ['allowPrivilegeEscalation', s.allowPrivilegeEscalation === true],
    ['privileged', s.privileged === true],
    ['readOnlyRootFilesystem', s.readOnlyRootFilesystem === false],
    ['procMount', s.procMount !== undefined && s.procMount !== 'Default'],
    [
      'seccompProfile.type',
      s.seccompProfile !== undefined && json(s.seccompProfile)?.type !== 'RuntimeDefault',
    ],
    [
      'appArmorProfile.type',
      s.appArmorProfile !== undefined && json(s.appArmorProfile)?.type !== 'RuntimeDefault',
    ],
    ['windowsOptions.hostProcess', json(s.windowsOptions)?.hostProcess === true],
  ];
  const found = checks.find(([, weaker]) => weaker);
  if (found !== undefined) return found[0];
  if (s.seLinuxOptions !== undefined) {
    const options = json(s.seLinuxOptions);
    const field = options === undefined ? 'seLinuxOptions' : seLinuxWeakening(options);
    if (field !== undefined) return field;
  }
  const added = json(s.capabilities)?.add;
  if (added !== undefined) {
    const list = Array.isArray(added) ? added : [added];
    const extra = list.findIndex((c) => c !== ADDABLE_CAPABILITY);
    if (extra >= 0) return `capabilities.add[${extra}]`;
  }
  const sysctls = s.sysctls;
  if (sysctls !== undefined) {
    const list = Array.isArray(sysctls) ? sysctls : [sysctls];
    const unsafe = list.findIndex((entry) => !SAFE_SYSCTLS.has(String(json(entry)?.name)));
    if (unsafe >= 0) return `sysctls[${unsafe}].name`;
  }
  return undefined;
}

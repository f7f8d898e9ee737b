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

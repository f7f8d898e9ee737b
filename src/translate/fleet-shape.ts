// The rules of a DataPlaneProxy's spec.kubernetes that no schema type says: fields that exclude each other, the
// drain that must fit the grace period, and security settings that would weaken the proxy's own. The CRD's CEL
// rules say the same; here they hold in standalone mode and `portico translate` too.
import type { FleetShape as ApiFleetShape } from '../api/fleet-shape.js';
import {
  type FleetShape,
  isSecurityAnnotation,
  type KubeJson,
  PROXY_EXIT_SECONDS,
  PROXY_MAX_DRAIN_SECONDS,
  RESERVED_PROXY_ENV,
  weakeningField,
} from '../ir/fleet-shape.js';

const AT = 'spec.kubernetes';

function workloadProblem(k: ApiFleetShape): string | undefined {
  if (k.deployment !== undefined && k.daemonSet !== undefined)
    return `${AT}.daemonSet: must not be set together with ${AT}.deployment`;
  if (k.daemonSet !== undefined && k.horizontalPodAutoscaler !== undefined)
    return `${AT}.horizontalPodAutoscaler: must not be set with ${AT}.daemonSet (one proxy per node)`;
  if (k.deployment?.replicas !== undefined && k.horizontalPodAutoscaler !== undefined)
    return `${AT}.deployment.replicas: must not be set with ${AT}.horizontalPodAutoscaler (the autoscaler sets the replicas)`;
  const strategy = k.deployment?.strategy;
  if (strategy?.type === 'Recreate' && strategy.rollingUpdate !== undefined)
    return `${AT}.deployment.strategy.rollingUpdate: may only be set when type is RollingUpdate`;
  const update = k.daemonSet?.updateStrategy;
  if (update?.type === 'OnDelete' && update.rollingUpdate !== undefined)
    return `${AT}.daemonSet.updateStrategy.rollingUpdate: may only be set when type is RollingUpdate`;
  return undefined;
}

function autoscalerProblem(k: ApiFleetShape): string | undefined {
  const hpa = k.horizontalPodAutoscaler;
  if (hpa === undefined) return undefined;
  if (hpa.minReplicas !== undefined && hpa.minReplicas > hpa.maxReplicas)
    return `${AT}.horizontalPodAutoscaler.minReplicas: must be at most maxReplicas (${hpa.maxReplicas})`;
  for (const [i, metric] of (hpa.metrics ?? []).entries()) {
    // Each metric type has its own field, named as the type with a lower-case first letter.
    const field = metric.type.charAt(0).toLowerCase() + metric.type.slice(1);
    if ((metric as Record<string, unknown>)[field] === undefined)
      return `${AT}.horizontalPodAutoscaler.metrics[${i}].${field}: required when type is ${metric.type}`;
  }
  return undefined;
}

function budgetProblem(k: ApiFleetShape): string | undefined {
  const pdb = k.podDisruptionBudget;
  if (pdb === undefined) return undefined;
  if (pdb.minAvailable !== undefined && pdb.maxUnavailable !== undefined)
    return `${AT}.podDisruptionBudget: minAvailable and maxUnavailable exclude each other`;
  if (pdb.minAvailable === undefined && pdb.maxUnavailable === undefined)
    return `${AT}.podDisruptionBudget: one of minAvailable or maxUnavailable is required`;
  return undefined;
}

/** The first field of a security context that would make the proxy's pod weaker than Portico's own. */
function weakerSecurity(s: KubeJson | undefined, at: string): string | undefined {
  const field = s === undefined ? undefined : weakeningField(s);
  return field === undefined
    ? undefined
    : `${at}.${field}: must not weaken the proxy's security context (Pod Security "restricted")`;
}

/** An annotation that would set a profile around the security context's fields (the old way of setting them). */
function securityAnnotation(annotations: Record<string, string> | undefined): string | undefined {
  const key = Object.keys(annotations ?? {}).find(isSecurityAnnotation);
  return key === undefined
    ? undefined
    : `${AT}.pod.annotations[${JSON.stringify(key)}]: must not weaken the proxy's security context (Pod Security "restricted"): set profiles in securityContext`;
}

function podProblem(k: ApiFleetShape, drainSeconds: number): string | undefined {
  const grace = k.pod?.terminationGracePeriodSeconds;
  const least = drainSeconds + PROXY_EXIT_SECONDS;
  if (grace !== undefined && grace < least)
    return `${AT}.pod.terminationGracePeriodSeconds: must be at least ${least} (the proxies drain for up to ${drainSeconds} s (spec.drainSeconds), then exit)`;
  const reserved = (k.container?.env ?? []).findIndex((e) => RESERVED_PROXY_ENV.includes(e.name));
  if (reserved >= 0)
    return `${AT}.container.env[${reserved}].name: ${k.container?.env?.[reserved]?.name} is set by Portico`;
  return (
    weakerSecurity(k.pod?.securityContext, `${AT}.pod.securityContext`) ??
    weakerSecurity(k.container?.securityContext, `${AT}.container.securityContext`) ??
    securityAnnotation(k.pod?.annotations)
  );
}

function serviceProblem(k: ApiFleetShape): string | undefined {
  const service = k.service;
  if (service === undefined) return undefined;
  const type = service.type ?? 'LoadBalancer';
  if (type === 'ClusterIP' && service.externalTrafficPolicy !== undefined)
    return `${AT}.service.externalTrafficPolicy: may only be set when type is LoadBalancer or NodePort`;
  if (type === 'LoadBalancer') return undefined;
  const only = (
    ['loadBalancerClass', 'loadBalancerSourceRanges', 'allocateLoadBalancerNodePorts'] as const
  ).find((f) => service[f] !== undefined);
  return only === undefined ? undefined : `${AT}.service.${only}: may only be set when type is LoadBalancer`;
}

/** Why the shape is refused, naming the field; undefined when it is not. `drainSeconds`: the spec's own. */
export function fleetShapeProblem(
  k: ApiFleetShape,
  drainSeconds = PROXY_MAX_DRAIN_SECONDS,
): string | undefined {
  return (
    workloadProblem(k) ??
    autoscalerProblem(k) ??
    budgetProblem(k) ??
    podProblem(k, drainSeconds) ??
    serviceProblem(k)
  );
}

/** The shape as the fleet's infrastructure carries it (only a checked one: see fleetShapeProblem). */
export function fleetShapeOf(k: ApiFleetShape): FleetShape | undefined {
  const shape = structuredClone(k) as FleetShape;
  return Object.keys(shape).length === 0 ? undefined : shape;
}

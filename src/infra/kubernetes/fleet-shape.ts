// A DataPlaneProxy's spec.kubernetes over the objects Portico renders by default: the pod's and the proxy
// container's fields, the Service's, and the autoscaler and disruption budget that exist only when asked for.
// Security contexts take from a shape only ids and restrictions that weaken nothing (ir/fleet-shape.ts), over
// Portico's own: the translator refuses a shape that tries more, and whatever reaches here unchecked is left out,
// so a pod is never less than Pod Security `restricted` as Portico makes it.
import type {
  V1Container,
  V1ObjectMeta,
  V1PodDisruptionBudget,
  V1PodSecurityContext,
  V1PodSpec,
  V1PodTemplateSpec,
  V1SecurityContext,
  V1Service,
  V2HorizontalPodAutoscaler,
  V2HorizontalPodAutoscalerBehavior,
  V2MetricSpec,
} from '@kubernetes/client-node';
import type { FleetInfra } from '../../ir/fleet-infra.js';
import {
  ADDABLE_CAPABILITY,
  defaultTerminationGraceSeconds,
  type FleetShape,
  isSecurityAnnotation,
  type KubeJson,
  weakeningField,
} from '../../ir/fleet-shape.js';

/** Shape fields are Kubernetes JSON already checked against Kubernetes' own field shapes: handed on as typed. */
function as<T>(value: unknown): T {
  return value as T;
}

/** What a shape may set in a pod's security context: ids, and restrictions that weaken nothing. */
const POD_SECURITY_FIELDS: readonly string[] = [
  'runAsUser',
  'runAsGroup',
  'fsGroup',
  'fsGroupChangePolicy',
  'supplementalGroups',
  'supplementalGroupsPolicy',
  'seLinuxOptions',
  'appArmorProfile',
];

/** What a shape may set in the proxy container's: the same, capabilities aside (see containerSecurity). */
const CONTAINER_SECURITY_FIELDS: readonly string[] = [
  'runAsUser',
  'runAsGroup',
  'seLinuxOptions',
  'appArmorProfile',
];

/**
 * The fields of `theirs` among `fields` that weaken nothing (weakeningField, the translator's own rule): the
 * translator refused a shape with any other, and what reaches here unchecked is left out, never rendered.
 */
function safeFields(theirs: KubeJson | undefined, fields: readonly string[]): KubeJson {
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    const value = theirs?.[field];
    if (value !== undefined && weakeningField({ [field]: value }) === undefined) out[field] = value;
  }
  return out;
}

/** The pod's context: Portico's own, with the ids, SELinux level and safe sysctls a shape chose. */
function podSecurity(ours: V1PodSecurityContext, theirs: KubeJson | undefined): V1PodSecurityContext {
  const sysctls = (Array.isArray(theirs?.sysctls) ? theirs.sysctls : []).filter(
    (s: unknown) => weakeningField({ sysctls: [s] }) === undefined,
  );
  return {
    ...ours,
    ...as<V1PodSecurityContext>(safeFields(theirs, POD_SECURITY_FIELDS)),
    ...(sysctls.length === 0 ? {} : { sysctls: as<V1PodSecurityContext['sysctls']>(sysctls) }),
  };
}

/** Capabilities are dropped whole (ours: ALL) and only NET_BIND_SERVICE may be added; the rest is ours. */
function containerSecurity(ours: V1SecurityContext, theirs: KubeJson | undefined): V1SecurityContext {
  if (theirs === undefined) return ours;
  const capabilities = as<V1SecurityContext['capabilities']>(theirs.capabilities);
  const drop = [...new Set([...(ours.capabilities?.drop ?? []), ...(capabilities?.drop ?? [])])];
  const add = (capabilities?.add ?? []).filter((c) => c === ADDABLE_CAPABILITY);
  return {
    ...ours,
    ...as<V1SecurityContext>(safeFields(theirs, CONTAINER_SECURITY_FIELDS)),
    capabilities: { drop, ...(add.length === 0 ? {} : { add }) },
  };
}

/** Annotations without those that set a security profile around the pod's fields (isSecurityAnnotation). */
function withoutSecurityAnnotations(annotations: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(annotations).filter(([key]) => !isSecurityAnnotation(key)));
}

/** The proxy container with the shape's resources, extra environment and security context. */
export function shapedProxyContainer(container: V1Container, shape: FleetShape | undefined): V1Container {
  const c = shape?.container;
  if (c === undefined) return container;
  return {
    ...container,
    env: [...(container.env ?? []), ...as<V1Container['env'] & object>(c.env ?? [])],
    ...(c.resources === undefined ? {} : { resources: as<V1Container['resources']>(c.resources) }),
    securityContext: containerSecurity(container.securityContext ?? {}, c.securityContext),
  };
}

/** Pull secrets by name, the controller's first, each once. */
function pullSecrets(
  ours: { name: string }[],
  theirs: { name: string }[],
): { imagePullSecrets?: { name: string }[] } {
  const names = [...new Set([...ours, ...theirs].map((s) => s.name))];
  return names.length === 0 ? {} : { imagePullSecrets: names.map((name) => ({ name })) };
}

/** The pod template with the shape's metadata, placement, security and grace period. */
export function shapedPodTemplate(
  template: V1PodTemplateSpec,
  infra: FleetInfra,
  controllerPullSecrets: { name: string }[],
): V1PodTemplateSpec {
  const pod = infra.kubernetes?.pod;
  const spec = template.spec as V1PodSpec;
  const labels = { ...pod?.labels, ...template.metadata?.labels };
  const annotations = withoutSecurityAnnotations({ ...pod?.annotations, ...template.metadata?.annotations });
  const shaped: V1PodSpec = {
    ...spec,
    terminationGracePeriodSeconds:
      pod?.terminationGracePeriodSeconds ?? defaultTerminationGraceSeconds(infra.drainSeconds),
    securityContext: podSecurity(spec.securityContext ?? {}, pod?.securityContext),
    ...(pod?.nodeSelector === undefined ? {} : { nodeSelector: { ...pod.nodeSelector } }),
    ...(pod?.tolerations === undefined ? {} : { tolerations: as<V1PodSpec['tolerations']>(pod.tolerations) }),
    ...(pod?.affinity === undefined ? {} : { affinity: as<V1PodSpec['affinity']>(pod.affinity) }),
    ...(pod?.topologySpreadConstraints === undefined
      ? {}
      : {
          topologySpreadConstraints: as<V1PodSpec['topologySpreadConstraints']>(
            pod.topologySpreadConstraints,
          ),
        }),
    ...(pod?.priorityClassName === undefined ? {} : { priorityClassName: pod.priorityClassName }),
    ...pullSecrets(controllerPullSecrets, pod?.imagePullSecrets ?? []),
  };
  const metadata: V1ObjectMeta = { labels, ...(Object.keys(annotations).length > 0 ? { annotations } : {}) };
  return { metadata, spec: shaped };
}

/** The Service with the shape's type, annotations and load-balancer fields; the Gateway's annotations win. */
export function shapedService(service: V1Service, infra: FleetInfra): V1Service {
  const s = infra.kubernetes?.service;
  if (s === undefined) return service;
  const annotations = { ...s.annotations, ...service.metadata?.annotations };
  return {
    ...service,
    metadata: { ...service.metadata, ...(Object.keys(annotations).length > 0 ? { annotations } : {}) },
    spec: {
      ...service.spec,
      type: s.type ?? 'LoadBalancer',
      ...(s.externalTrafficPolicy === undefined ? {} : { externalTrafficPolicy: s.externalTrafficPolicy }),
      ...(s.loadBalancerClass === undefined ? {} : { loadBalancerClass: s.loadBalancerClass }),
      ...(s.loadBalancerSourceRanges === undefined
        ? {}
        : { loadBalancerSourceRanges: [...s.loadBalancerSourceRanges] }),
      ...(s.allocateLoadBalancerNodePorts === undefined
        ? {}
        : { allocateLoadBalancerNodePorts: s.allocateLoadBalancerNodePorts }),
    },
  };
}

/** An autoscaling/v2 HorizontalPodAutoscaler for the fleet's Deployment, when the shape asks for one. */
export function fleetAutoscaler(
  infra: FleetInfra,
  metadata: V1ObjectMeta,
): V2HorizontalPodAutoscaler | undefined {
  const hpa = infra.kubernetes?.horizontalPodAutoscaler;
  if (hpa === undefined) return undefined;
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata,
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: infra.name },
      ...(hpa.minReplicas === undefined ? {} : { minReplicas: hpa.minReplicas }),
      maxReplicas: hpa.maxReplicas,
      ...(hpa.metrics === undefined ? {} : { metrics: as<V2MetricSpec[]>(hpa.metrics) }),
      ...(hpa.behavior === undefined
        ? {}
        : { behavior: as<V2HorizontalPodAutoscalerBehavior>(hpa.behavior) }),
    },
  };
}

/** A policy/v1 PodDisruptionBudget over the fleet's pods (its selector), when the shape asks for one. */
export function fleetDisruptionBudget(
  infra: FleetInfra,
  metadata: V1ObjectMeta,
): V1PodDisruptionBudget | undefined {
  const pdb = infra.kubernetes?.podDisruptionBudget;
  if (pdb === undefined) return undefined;
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata,
    spec: {
      selector: { matchLabels: { ...infra.labels } },
      ...(pdb.minAvailable === undefined ? {} : { minAvailable: pdb.minAvailable }),
      ...(pdb.maxUnavailable === undefined ? {} : { maxUnavailable: pdb.maxUnavailable }),
      ...(pdb.unhealthyPodEvictionPolicy === undefined
        ? {}
        : { unhealthyPodEvictionPolicy: pdb.unhealthyPodEvictionPolicy }),
    },
  };
}

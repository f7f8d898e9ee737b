// A DataPlaneProxy's spec.kubernetes over the objects Portico renders by default: the pod's and the proxy
// container's fields, the Service's, and the autoscaler and disruption budget that exist only when asked for.
// Security contexts merge field by field over Portico's own; the translator has refused any value that would
// weaken them (root, privilege, a writable root filesystem, added capabilities, no seccomp), so a user may only
// choose among settings Pod Security `restricted` admits (another non-root uid, an fsGroup, SELinux options).
import type {
  V1Container,
  V1ObjectMeta,
  V1PodDisruptionBudget,
  V1PodSpec,
  V1PodTemplateSpec,
  V1SecurityContext,
  V1Service,
  V2HorizontalPodAutoscaler,
  V2HorizontalPodAutoscalerBehavior,
  V2MetricSpec,
} from '@kubernetes/client-node';
import type { FleetInfra } from '../../ir/fleet-infra.js';
import { defaultTerminationGraceSeconds, type FleetShape } from '../../ir/fleet-shape.js';

/** Shape fields are Kubernetes JSON already checked against Kubernetes' own field shapes: handed on as typed. */
function as<T>(value: unknown): T {
  return value as T;
}

/** Capabilities are dropped whole (ours: ALL) and added only as the translator let through. */
function containerSecurity(
  ours: V1SecurityContext,
  theirs: V1SecurityContext | undefined,
): V1SecurityContext {
  if (theirs === undefined) return ours;
  const drop = [...new Set([...(ours.capabilities?.drop ?? []), ...(theirs.capabilities?.drop ?? [])])];
  const add = theirs.capabilities?.add;
  return {
    ...ours,
    ...theirs,
    capabilities: { drop, ...(add === undefined || add.length === 0 ? {} : { add }) },
    seccompProfile: theirs.seccompProfile ?? ours.seccompProfile,
  };
}

/** The proxy container with the shape's resources, extra environment and security context. */
export function shapedProxyContainer(container: V1Container, shape: FleetShape | undefined): V1Container {
  const c = shape?.container;
  if (c === undefined) return container;
  return {
    ...container,
    env: [...(container.env ?? []), ...as<V1Container['env'] & object>(c.env ?? [])],
    ...(c.resources === undefined ? {} : { resources: as<V1Container['resources']>(c.resources) }),
    securityContext: containerSecurity(
      container.securityContext ?? {},
      as<V1SecurityContext | undefined>(c.securityContext),
    ),
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
  const annotations = { ...pod?.annotations, ...template.metadata?.annotations };
  const shaped: V1PodSpec = {
    ...spec,
    terminationGracePeriodSeconds:
      pod?.terminationGracePeriodSeconds ?? defaultTerminationGraceSeconds(infra.drainSeconds),
    securityContext: { ...spec.securityContext, ...as<V1PodSpec['securityContext']>(pod?.securityContext) },
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

// The fleet the fleet-shape suite shapes: its class's DataPlaneProxy, its Gateway's own laid over it (each test
// changes one part), the Gateway with spec.infrastructure's metadata, and what each object must then show.
import assert from 'node:assert/strict';
import { type DeployType, GATEWAY_NAME_LABEL } from '../../../src/ir/fleet-infra.js';
import type { Cluster } from '../../cluster/harness.js';
import { asList, type Loose } from '../../cluster/kube-api.js';
import { apply } from './traffic.js';

/** Who and where: the cluster, Portico's namespace and mode, and the names the suite's objects take. */
export interface ShapedFleet {
  cluster: Cluster;
  system: string;
  deployType: DeployType;
  /** The Gateway's namespace (its backend, receiver and own DataPlaneProxy too). */
  ns: string;
  className: string;
  priorityClass: string;
  /** The node's kubernetes.io/arch, which the Gateway's nodeSelector adds to the class's. */
  nodeArch: string;
  /** The OTLP/HTTP receiver's traces URL. */
  tracesUrl: string;
}

export const CLASS_PARAMETERS = 'shape-class';
export const GATEWAY_PARAMETERS = 'edge-params';
export const GATEWAY = 'edge';
export const HOST = 'shape.example.com';
export const INFRA_LABELS = { 'e2e.portico.io/team': 'edge' };
export const INFRA_ANNOTATIONS = { 'e2e.portico.io/owner': 'fleet-shape' };
export const TOLERATION = {
  key: 'e2e.portico.io/dedicated',
  operator: 'Equal',
  value: 'gateway',
  effect: 'NoSchedule',
};

const PROXY_PODS = { matchLabels: { 'app.kubernetes.io/name': 'portico-proxy' } };
/** Preferred, so the one node of the test cluster still takes every pod. */
export const AFFINITY = {
  podAntiAffinity: {
    preferredDuringSchedulingIgnoredDuringExecution: [
      { weight: 10, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: PROXY_PODS } },
    ],
  },
};
export const SPREAD = {
  maxSkew: 1,
  topologyKey: 'kubernetes.io/hostname',
  whenUnsatisfiable: 'ScheduleAnyway',
  labelSelector: PROXY_PODS,
};
/** The test's client reaches load-balancer addresses from the host's end of the node's veth, in 10.200.0.0/16. */
export const SOURCE_RANGES = ['10.0.0.0/8'];

/** What the Gateway's own DataPlaneProxy says; each test changes one part of it. */
export interface GatewayParams {
  drainSeconds: number;
  memoryRequest?: string;
  /** Set: a rollout strategy of the Gateway's own (the class's is maxSurge 1). */
  maxSurge?: number;
  /** An autoscaler of 2 replicas, where the class's Deployment has 3. */
  autoscaler?: boolean;
  daemonSet?: boolean;
  /** The Service's type; LoadBalancer (the default) with externalTrafficPolicy Local and source ranges. */
  service?: 'LoadBalancer' | 'ClusterIP' | 'NodePort';
  /** A LoadBalancer Service's class: another implementation's, which the test cluster's load balancer leaves alone. */
  loadBalancerClass?: string;
  /** false: no disruption budget of the Gateway's (minAvailable 1 otherwise). */
  budget?: false;
}

/** The class's DataPlaneProxy, in the controller's namespace; `budget` false: without its disruption budget. */
export function classParameters(f: ShapedFleet, budget = true) {
  return {
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'DataPlaneProxy',
    metadata: { name: CLASS_PARAMETERS, namespace: f.system },
    spec: {
      workers: 1,
      // The grace period below must leave the class's own drain 10 s (the CRD says so); the Gateway's is shorter.
      drainSeconds: 30,
      kubernetes: {
        deployment: {
          replicas: 3,
          strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
        },
        ...(budget ? { podDisruptionBudget: { maxUnavailable: 1 } } : {}),
        pod: {
          labels: { 'e2e.portico.io/layer': 'class', 'e2e.portico.io/from-class': 'yes' },
          annotations: { 'e2e.portico.io/class-note': 'class' },
          nodeSelector: { 'kubernetes.io/os': 'linux' },
          tolerations: [TOLERATION],
          affinity: AFFINITY,
          topologySpreadConstraints: [SPREAD],
          // Only a class's DataPlaneProxy may name Secrets of the controller's namespace; the image is already on
          // the node (IfNotPresent), so the kubelet never needs this one.
          imagePullSecrets: [{ name: 'e2e-registry' }],
          terminationGracePeriodSeconds: 45,
        },
        container: {
          resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '512Mi' } },
          env: [{ name: 'E2E_LAYER', value: 'class' }],
        },
        service: { annotations: { 'e2e.portico.io/lb': 'class' } },
      },
    },
  };
}

/** The Gateway's own DataPlaneProxy, laid over the class's: each field here overrides or adds to it. */
export async function applyGatewayParameters(f: ShapedFleet, p: GatewayParams): Promise<void> {
  const workload = p.daemonSet
    ? {
        daemonSet: {
          updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
        },
      }
    : p.autoscaler
      ? { horizontalPodAutoscaler: { minReplicas: 2, maxReplicas: 2 } }
      : {};
  await apply(f.cluster, {
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'DataPlaneProxy',
    metadata: { name: GATEWAY_PARAMETERS, namespace: f.ns },
    spec: {
      drainSeconds: p.drainSeconds,
      kubernetes: {
        ...workload,
        ...(p.maxSurge === undefined || p.daemonSet
          ? {}
          : {
              deployment: {
                strategy: {
                  type: 'RollingUpdate',
                  rollingUpdate: { maxSurge: p.maxSurge, maxUnavailable: 0 },
                },
              },
            }),
        ...(p.budget === false ? {} : { podDisruptionBudget: { minAvailable: 1 } }),
        pod: {
          labels: { 'e2e.portico.io/layer': 'gateway' },
          nodeSelector: { 'kubernetes.io/arch': f.nodeArch },
          priorityClassName: f.priorityClass,
          securityContext: { fsGroup: 10001 },
        },
        container: {
          env: [{ name: 'E2E_LAYER', value: 'gateway' }],
          ...(p.memoryRequest === undefined ? {} : { resources: { requests: { memory: p.memoryRequest } } }),
        },
        service:
          p.service !== undefined && p.service !== 'LoadBalancer'
            ? { type: p.service }
            : {
                type: 'LoadBalancer',
                externalTrafficPolicy: 'Local',
                loadBalancerSourceRanges: SOURCE_RANGES,
                allocateLoadBalancerNodePorts: false,
                ...(p.loadBalancerClass === undefined ? {} : { loadBalancerClass: p.loadBalancerClass }),
              },
      },
      telemetry: { tracing: { endpoint: f.tracesUrl } },
    },
  } as never);
}

/** The Gateway, with spec.infrastructure's labels and annotations and its own parameters (`params`). */
export async function applyShapedGateway(f: ShapedFleet, params: string): Promise<void> {
  await apply(f.cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: GATEWAY, namespace: f.ns },
    spec: {
      gatewayClassName: f.className,
      infrastructure: {
        labels: INFRA_LABELS,
        annotations: INFRA_ANNOTATIONS,
        parametersRef: { group: 'gateway.portico.io', kind: 'DataPlaneProxy', name: params },
      },
      listeners: [
        { name: 'http', port: 80, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'All' } } },
      ],
    },
  });
}

/** spec.infrastructure's labels and annotations (and the gateway-name label) are on the object. */
export function assertPropagated(object: Loose | undefined, what: string): void {
  assert.ok(object !== undefined, `${what} exists`);
  const labels = (object.metadata?.labels ?? {}) as unknown as Record<string, string>;
  const annotations = (object.metadata?.annotations ?? {}) as unknown as Record<string, string>;
  for (const [k, v] of Object.entries({ ...INFRA_LABELS, [GATEWAY_NAME_LABEL]: GATEWAY }))
    assert.equal(labels[k], v, `${what}: label ${k}`);
  for (const [k, v] of Object.entries(INFRA_ANNOTATIONS))
    assert.equal(annotations[k], v, `${what}: annotation ${k}`);
}

export function container(podSpec: Loose | undefined, name: string): Loose {
  const found = asList(podSpec?.containers).find((c) => c.name === name);
  assert.ok(found !== undefined, `container ${name}`);
  return found;
}

/** The value after `flag` in a container's args (or command). */
export function flagValue(args: Loose | undefined, flag: string): string | undefined {
  const list = asList(args).map(String);
  const i = list.indexOf(flag);
  return i < 0 ? undefined : list[i + 1];
}

/** The pod template: class and Gateway layered (labels, placement, security, drain, container). */
export function assertPodTemplate(f: ShapedFleet, template: Loose | undefined, what: string): void {
  const labels = template?.metadata?.labels;
  assert.equal(labels?.['e2e.portico.io/layer'], 'gateway', `${what}: the Gateway's label wins`);
  assert.equal(labels?.['e2e.portico.io/from-class'], 'yes', `${what}: the class's label stays`);
  assert.equal(template?.metadata?.annotations?.['e2e.portico.io/class-note'], 'class', what);
  const spec = template?.spec;
  assert.deepEqual(
    spec?.nodeSelector,
    { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': f.nodeArch },
    what,
  );
  assert.deepEqual(spec?.tolerations, [TOLERATION], what);
  assert.deepEqual(spec?.affinity, AFFINITY, `${what}: the class's affinity`);
  assert.deepEqual(spec?.topologySpreadConstraints, [SPREAD], `${what}: the class's spread`);
  assert.deepEqual(spec?.imagePullSecrets, [{ name: 'e2e-registry' }], `${what}: the class's pull secrets`);
  assert.equal(spec?.priorityClassName, f.priorityClass, what);
  assert.equal(spec?.securityContext?.fsGroup, 10001, `${what}: the Gateway's fsGroup`);
  assert.equal(spec?.securityContext?.runAsNonRoot, true, `${what}: Portico's own security stays`);
  assert.equal(spec?.terminationGracePeriodSeconds, 45, `${what}: the class's grace period`);
  const proxy = container(spec, 'proxy');
  assert.equal(flagValue(proxy.args, '--max-drain-seconds'), '20', `${what}: the Gateway's drainSeconds`);
  assert.equal(flagValue(proxy.args, '--workers'), '1', `${what}: the class's workers`);
  assert.equal(flagValue(proxy.args, '--tracing-endpoint'), f.tracesUrl, `${what}: the Gateway's tracing`);
  for (const name of ['proxy', 'shutdown-manager']) {
    const preStop: Loose | undefined = container(spec, name).lifecycle?.preStop?.exec?.command;
    assert.equal(flagValue(preStop, '--timeout-seconds'), '20', `${what}: ${name} preStop drains 20 s`);
  }
  const env = asList(proxy.env).filter((e) => e.name === 'E2E_LAYER');
  assert.deepEqual(
    env.map((e) => e.value),
    ['gateway'],
    `${what}: the Gateway's env list replaces the class's`,
  );
}

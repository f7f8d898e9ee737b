// A fleet's Kubernetes objects from its infra spec: ServiceAccount, Deployment or DaemonSet (proxy +
// shutdown-manager), a Service with one port per listener port (LoadBalancer unless the shape says otherwise),
// and the HorizontalPodAutoscaler and PodDisruptionBudget its DataPlaneProxy asks for.
import type {
  V1Container,
  V1DaemonSet,
  V1DaemonSetUpdateStrategy,
  V1Deployment,
  V1DeploymentStrategy,
  V1OwnerReference,
  V1PodDisruptionBudget,
  V1PodTemplateSpec,
  V1Probe,
  V1Service,
  V1ServiceAccount,
  V1Volume,
  V1VolumeMount,
  V2HorizontalPodAutoscaler,
} from '@kubernetes/client-node';
import type { DeployType, FleetInfra } from '../../ir/fleet-infra.js';
import { PROXY_MAX_DRAIN_SECONDS } from '../../ir/fleet-shape.js';
import { fleetProxyFlags } from '../../ir/proxy-flags.js';
import { CA_CONFIGMAP, CONTROLLER_SERVICE, PORTS, PRIVILEGED_PORT_OFFSET } from '../../ir/well-known.js';
import type { LogFormat } from '../../platform/log-line.js';
import {
  fleetAutoscaler,
  fleetDisruptionBudget,
  shapedPodTemplate,
  shapedProxyContainer,
  shapedService,
} from './fleet-shape.js';

/** How the controller runs its proxies: the image (its own, by default) and where discovery is reached. */
export interface ProxyRuntime {
  image: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  imagePullSecrets?: string[];
  /** Port of the controller's Service for config discovery (default PORTS.discovery). */
  discoveryPort?: number;
  /** The proxies' log format: the controller's own (json adds the flag; text is the proxy's default). */
  logFormat?: LogFormat;
}

export interface RenderOptions extends ProxyRuntime {
  controllerNamespace: string;
  deployType: DeployType;
  /** Default 1. */
  replicas?: number;
}

/** The Secret holding a fleet's own discovery client certificate (Controller Namespace Mode). */
export function fleetClientSecretName(infraName: string): string {
  return `${infraName}-client-cert`;
}
const PROXY_ADMIN = `127.0.0.1:${PORTS.proxyAdmin}`;
const CERT_DIR = '/etc/portico/certs';
const TOKEN_DIR = '/var/run/secrets/portico';

export interface FleetObjects {
  serviceAccount: V1ServiceAccount;
  /** A Deployment, or a DaemonSet when the DataPlaneProxy asks for one. */
  workload: V1Deployment | V1DaemonSet;
  service: V1Service;
  horizontalPodAutoscaler?: V2HorizontalPodAutoscaler;
  podDisruptionBudget?: V1PodDisruptionBudget;
}

/** The objects in the order they are applied: the Service before the pods, the autoscaler after its target. */
export function fleetObjectList(objects: FleetObjects): (FleetObjects[keyof FleetObjects] & object)[] {
  const { serviceAccount, service, workload, horizontalPodAutoscaler, podDisruptionBudget } = objects;
  return [serviceAccount, service, workload, horizontalPodAutoscaler, podDisruptionBudget].filter(
    (o) => o !== undefined,
  );
}

function ownerReferences(infra: FleetInfra): V1OwnerReference[] | undefined {
  if (infra.owner?.uid === undefined) return undefined;
  const [, name] = infra.owner.gateway.split('/');
  return [
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      name: name ?? infra.owner.gateway,
      uid: infra.owner.uid,
      blockOwnerDeletion: true,
    },
  ];
}

/** On every object a controller makes: `portico cleanup` finds them by it when its release is uninstalled. */
export const CONTROLLER_NAMESPACE_LABEL = 'gateway.portico.io/controller-namespace';

function metadata(infra: FleetInfra, options: RenderOptions) {
  const refs = ownerReferences(infra);
  const annotations = infra.propagated.annotations;
  return {
    name: infra.name,
    namespace: infra.namespace,
    // What the Gateway asks for first, so Portico's own labels win; the Deployment's selector stays the
    // translator's labels alone, which never change.
    labels: {
      ...infra.propagated.labels,
      ...infra.labels,
      [CONTROLLER_NAMESPACE_LABEL]: options.controllerNamespace,
    },
    ...(Object.keys(annotations).length > 0 ? { annotations: { ...annotations } } : {}),
    ...(refs === undefined ? {} : { ownerReferences: refs }),
  };
}

/** How a fleet's proxy authenticates to discovery: what its pod mounts, and the proxy's arguments for it. */
interface Credentials {
  volumes: V1Volume[];
  mounts: V1VolumeMount[];
  args: string[];
}

/**
 * Token mode (Gateway Namespace Mode): only the CA and a short-lived, audience-bound token. Mutual TLS mode:
 * the fleet's own client certificate Secret, which no other fleet's pods mount.
 */
function credentials(infra: FleetInfra, options: RenderOptions): Credentials {
  if (options.deployType === 'GatewayNamespace') {
    return {
      volumes: [
        { name: 'ca', configMap: { name: CA_CONFIGMAP, items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        {
          name: 'token',
          projected: {
            sources: [
              {
                serviceAccountToken: {
                  audience: `${CONTROLLER_SERVICE}.${options.controllerNamespace}.svc.cluster.local`,
                  expirationSeconds: 3600,
                  path: 'token',
                },
              },
            ],
          },
        },
      ],
      mounts: [
        { name: 'ca', mountPath: CERT_DIR, readOnly: true },
        { name: 'token', mountPath: TOKEN_DIR, readOnly: true },
      ],
      args: ['--ca-file', `${CERT_DIR}/ca.crt`, '--token-file', `${TOKEN_DIR}/token`],
    };
  }
  return {
    volumes: [
      {
        name: 'certs',
        secret: {
          secretName: fleetClientSecretName(infra.name),
          items: ['ca.crt', 'tls.crt', 'tls.key'].map((k) => ({ key: k, path: k })),
        },
      },
    ],
    mounts: [{ name: 'certs', mountPath: CERT_DIR, readOnly: true }],
    args: [
      '--ca-file',
      `${CERT_DIR}/ca.crt`,
      '--cert-file',
      `${CERT_DIR}/tls.crt`,
      '--key-file',
      `${CERT_DIR}/tls.key`,
    ],
  };
}

// The image's entrypoint is tini (PID 1, forwarding signals) then `portico`: containers pass only args.
function drainHook(infra: FleetInfra) {
  return {
    preStop: {
      exec: {
        command: [
          'portico',
          'shutdown-manager',
          'drain',
          '--proxy-admin',
          PROXY_ADMIN,
          '--timeout-seconds',
          String(drainSeconds(infra)),
        ],
      },
    },
  };
}

/** How long the proxies wait for requests in flight when they stop (the DataPlaneProxy's drainSeconds). */
function drainSeconds(infra: FleetInfra): number {
  return infra.drainSeconds ?? PROXY_MAX_DRAIN_SECONDS;
}

/** Pod Security Admission `restricted`, at pod and container level alike. */
const SECCOMP = { type: 'RuntimeDefault' };
const CONTAINER_SECURITY = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: SECCOMP,
};

function proxyContainer(infra: FleetInfra, options: RenderOptions, creds: Credentials): V1Container {
  return shapedProxyContainer(defaultProxyContainer(infra, options, creds), infra.kubernetes);
}

function defaultProxyContainer(infra: FleetInfra, options: RenderOptions, creds: Credentials): V1Container {
  const discoveryHost = `${CONTROLLER_SERVICE}.${options.controllerNamespace}.svc`;
  return {
    name: 'proxy',
    image: options.image,
    imagePullPolicy: options.imagePullPolicy ?? 'IfNotPresent',
    args: [
      'proxy',
      '--discovery',
      `${discoveryHost}:${options.discoveryPort ?? PORTS.discovery}`,
      '--fleet',
      infra.fleet,
      '--node',
      '$(POD_NAME)',
      ...creds.args,
      '--server-name',
      discoveryHost,
      '--port-offset',
      String(PRIVILEGED_PORT_OFFSET),
      '--ready-address',
      `0.0.0.0:${PORTS.proxyReady}`,
      '--metrics-address',
      `0.0.0.0:${PORTS.metrics}`,
      '--max-drain-seconds',
      String(drainSeconds(infra)),
      // Absent: the proxy counts the CPUs its container may use (its CPU limit).
      ...(infra.workers === undefined ? [] : ['--workers', String(infra.workers)]),
      ...fleetProxyFlags(infra),
      ...(options.logFormat === 'json' ? ['--log-format', 'json'] : []),
    ],
    env: [
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    ],
    // Not the listeners' ports: a listener added or removed would change the pod template and roll the proxies,
    // cutting long-lived (TCP, TLS, WebSocket) connections at their drain's end; the Service's numeric
    // targetPort reaches a port the pod does not list all the same.
    ports: [
      { name: 'metrics', containerPort: PORTS.metrics, protocol: 'TCP' },
      { name: 'ready', containerPort: PORTS.proxyReady, protocol: 'TCP' },
    ],
    // Every second: a new pod takes traffic (and its Gateway is Programmed) within a second of being ready, not at
    // the next 5 s tick; two misses in a row, so one slow answer on a busy node does not take it out.
    readinessProbe: {
      httpGet: { path: '/ready', port: PORTS.proxyReady },
      periodSeconds: 1,
      failureThreshold: 2,
    },
    // Liveness waits for the first answer: on a node where many proxies start at once a start can take longer
    // than liveness tolerates, and restarting it then only starts it again (a crash loop that never converges).
    startupProbe: startupProbe(PORTS.proxyReady, '/live'),
    // The proxy answers /live itself: a hung event loop times out, a drained proxy says so; kubelet restarts it.
    livenessProbe: {
      httpGet: { path: '/live', port: PORTS.proxyReady },
      periodSeconds: 10,
      timeoutSeconds: 2,
      failureThreshold: 3,
    },
    lifecycle: drainHook(infra),
    resources: { requests: { cpu: '100m', memory: '128Mi' } },
    securityContext: CONTAINER_SECURITY,
    volumeMounts: creds.mounts,
  };
}

/** Probed every second for up to five minutes; kubelet runs no other probe of the container before it passes. */
function startupProbe(port: number, path: string): V1Probe {
  return { httpGet: { path, port }, periodSeconds: 1, failureThreshold: 300 };
}

function shutdownManagerContainer(infra: FleetInfra, options: RenderOptions): V1Container {
  return {
    name: 'shutdown-manager',
    image: options.image,
    imagePullPolicy: options.imagePullPolicy ?? 'IfNotPresent',
    args: ['shutdown-manager', '--listen', `0.0.0.0:${PORTS.shutdownManager}`, '--proxy-admin', PROXY_ADMIN],
    ports: [{ name: 'shutdown', containerPort: PORTS.shutdownManager, protocol: 'TCP' }],
    // No readiness probe: the pod's readiness (and with it Programmed) is the proxy's; this sidecar serves no
    // traffic, and its next probe tick (up to 10 s after start) would only delay a new proxy's first request.
    startupProbe: startupProbe(PORTS.shutdownManager, '/healthz'),
    livenessProbe: { httpGet: { path: '/healthz', port: PORTS.shutdownManager }, periodSeconds: 10 },
    lifecycle: drainHook(infra),
    resources: { requests: { cpu: '10m', memory: '32Mi' } },
    securityContext: CONTAINER_SECURITY,
  };
}

/** The pods of either workload kind: Portico's defaults, then the DataPlaneProxy's shape over them. */
function fleetPodTemplate(infra: FleetInfra, options: RenderOptions): V1PodTemplateSpec {
  const creds = credentials(infra, options);
  const template: V1PodTemplateSpec = {
    metadata: {
      labels: { ...infra.propagated.labels, ...infra.labels },
      ...(Object.keys(infra.propagated.annotations).length > 0
        ? { annotations: { ...infra.propagated.annotations } }
        : {}),
    },
    spec: {
      serviceAccountName: infra.name,
      automountServiceAccountToken: false,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        fsGroup: 65532,
        seccompProfile: SECCOMP,
      },
      containers: [proxyContainer(infra, options, creds), shutdownManagerContainer(infra, options)],
      volumes: creds.volumes,
    },
  };
  // The grace period (default: room for the preStop drain of drainSeconds plus shutdown) is set here too.
  return shapedPodTemplate(
    template,
    infra,
    (options.imagePullSecrets ?? []).map((name) => ({ name })),
  );
}

/**
 * A Deployment, with no `replicas` at all under an autoscaler: server-side apply then never owns the field and
 * never resets what the autoscaler chose. Or a DaemonSet, one proxy per node.
 */
function fleetWorkload(infra: FleetInfra, options: RenderOptions): V1Deployment | V1DaemonSet {
  const shape = infra.kubernetes;
  const selector = { matchLabels: { ...infra.labels } };
  const template = fleetPodTemplate(infra, options);
  if (shape?.daemonSet !== undefined) {
    const updateStrategy = shape.daemonSet.updateStrategy as V1DaemonSetUpdateStrategy | undefined;
    return {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: metadata(infra, options),
      spec: { selector, template, ...(updateStrategy === undefined ? {} : { updateStrategy }) },
    };
  }
  const strategy = shape?.deployment?.strategy as V1DeploymentStrategy | undefined;
  const replicas =
    shape?.horizontalPodAutoscaler === undefined
      ? { replicas: shape?.deployment?.replicas ?? options.replicas ?? 1 }
      : {};
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: metadata(infra, options),
    spec: { ...replicas, selector, template, ...(strategy === undefined ? {} : { strategy }) },
  };
}

/** A Service (LoadBalancer unless the shape says otherwise) with one port per listener port, to the container's. */
function fleetService(infra: FleetInfra, options: RenderOptions): V1Service {
  const shaped = shapedService(defaultService(infra, options), infra);
  const spec = { ...shaped.spec };
  if (infra.clusterOnly === true && infra.kubernetes?.service?.type === undefined) spec.type = 'ClusterIP';
  // The address a Gateway asks for goes to the load balancer; a Service of another type has none to give.
  if (infra.requestedAddress !== undefined && spec.type === 'LoadBalancer')
    spec.loadBalancerIP = infra.requestedAddress;
  if (infra.requestedClusterIP !== undefined) spec.clusterIP = infra.requestedClusterIP;
  return { ...shaped, spec };
}

function defaultService(infra: FleetInfra, options: RenderOptions): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata(infra, options),
    spec: {
      type: 'LoadBalancer',
      selector: { ...infra.labels },
      ports: infra.ports.map((p) => ({
        name: p.name,
        port: p.port,
        protocol: p.protocol,
        targetPort: p.containerPort,
      })),
    },
  };
}

export function renderFleetObjects(infra: FleetInfra, options: RenderOptions): FleetObjects {
  const serviceAccount: V1ServiceAccount = {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: metadata(infra, options),
  };
  const objects: FleetObjects = {
    serviceAccount,
    workload: fleetWorkload(infra, options),
    service: fleetService(infra, options),
  };
  const autoscaler = fleetAutoscaler(infra, metadata(infra, options));
  if (autoscaler !== undefined) objects.horizontalPodAutoscaler = autoscaler;
  const budget = fleetDisruptionBudget(infra, metadata(infra, options));
  if (budget !== undefined) objects.podDisruptionBudget = budget;
  return objects;
}

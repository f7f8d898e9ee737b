// Test traffic and fixtures: an echo backend, Gateway API objects, and HTTP requests to a Gateway address.
import assert from 'node:assert/strict';
import { DEFAULT_CONTROLLER_NAME } from '../../../src/api/controller-config.js';
import type { Cluster } from '../../cluster/harness.js';
import { asList, call, eventually, type Loose, apply as serverSideApply } from '../../cluster/kube-api.js';
import { httpRequest, type Reply } from '../../support/http.js';
import { parsePrometheus, type Sample } from '../../support/prometheus.js';
import { RESTRICTED_CONTAINER, restrictedNamespace, trackClusterObject } from './install.js';

export type { Reply };

/** One request to a Gateway address with the given Host, on a fresh connection, bounded to 5 s. */
export function get(address: string, port: number, host: string, path = '/'): Promise<Reply> {
  return httpRequest(port, path, { address, host, timeoutMs: 5000 });
}

const PLURALS: Record<string, string> = {
  Namespace: 'namespaces',
  ServiceAccount: 'serviceaccounts',
  ConfigMap: 'configmaps',
  Secret: 'secrets',
  Deployment: 'deployments',
  Service: 'services',
  Pod: 'pods',
  GatewayClass: 'gatewayclasses',
  Gateway: 'gateways',
  HTTPRoute: 'httproutes',
  GRPCRoute: 'grpcroutes',
  TCPRoute: 'tcproutes',
  TLSRoute: 'tlsroutes',
  UDPRoute: 'udproutes',
  ReferenceGrant: 'referencegrants',
  DataPlaneProxy: 'dataplaneproxies',
  AccessPolicy: 'accesspolicies',
  ClientTrafficPolicy: 'clienttrafficpolicies',
  RateLimitPolicy: 'ratelimitpolicies',
  LimitRange: 'limitranges',
  ClusterTrustBundle: 'clustertrustbundles',
};

type Applied = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };

/** Server-side apply of one object, as `kubectl apply --server-side` does. */
export async function apply(cluster: Cluster, object: Applied & Record<string, unknown>): Promise<Loose> {
  const plural = PLURALS[object.kind];
  if (plural === undefined) throw new Error(`no plural for ${object.kind}`);
  return serverSideApply(cluster, object, plural, 'e2e');
}

/** The image the toolchain built; `portico echo` in it is the e2e backend. */
export function porticoImage(cluster: Cluster): string {
  const name = cluster.toolchain.images.portico?.names[0];
  if (name === undefined) throw new Error('no portico image in the toolchain');
  return name;
}

/** A namespace for a test, enforcing Pod Security Admission `restricted` (see install.ts). */
export { restrictedNamespace as namespace };

/** What runs in a test pod: this container's name, command or args and env, of the Portico image unless `image`. */
export interface PodContainer {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: unknown[];
}

/** A Deployment `name` of one pod (label `app: name`) running `container`, ready once `readyPort` accepts. */
export function podDeployment(
  cluster: Cluster,
  ns: string,
  name: string,
  container: PodContainer,
  readyPort: number,
): Promise<Loose> {
  const labels = { app: name };
  return apply(cluster, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              ...container,
              image: container.image ?? porticoImage(cluster),
              readinessProbe: { tcpSocket: { port: readyPort }, periodSeconds: 1 },
              // The namespaces enforce Pod Security `restricted`.
              securityContext: RESTRICTED_CONTAINER,
            },
          ],
        },
      },
    },
  } as never);
}

/**
 * One pod of the Portico image running `container`, ready once its port accepts, behind a Service `name` that
 * forwards `port.service` to `port.container`.
 */
export async function podService(
  cluster: Cluster,
  ns: string,
  name: string,
  container: PodContainer,
  port: { name: string; container: number; service: number },
): Promise<void> {
  const labels = { app: name };
  await podDeployment(cluster, ns, name, container, port.container);
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: ns },
    spec: { selector: labels, ports: [{ name: port.name, port: port.service, targetPort: port.container }] },
  } as never);
}

/** A Deployment of echo pods behind a Service on port 8080. */
export function echoBackend(cluster: Cluster, ns: string, name: string): Promise<void> {
  const env = [
    { name: 'HTTP_PORT', value: '3000' },
    { name: 'SERVICE_NAME', value: name },
    { name: 'NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
  ];
  return podService(
    cluster,
    ns,
    name,
    { name: 'echo', args: ['echo'], env },
    {
      name: 'http',
      container: 3000,
      service: 8080,
    },
  );
}

/** A namespace with an echo backend (Deployment and Service) of each name: the setup most suites start from. */
export async function echoNamespace(cluster: Cluster, ns: string, backends = ['echo']): Promise<void> {
  await restrictedNamespace(cluster, ns);
  for (const name of backends) await echoBackend(cluster, ns, name);
}

export async function gatewayClass(
  cluster: Cluster,
  name: string,
  controllerName: string,
  params?: { namespace: string; name: string },
): Promise<void> {
  trackClusterObject(`/apis/gateway.networking.k8s.io/v1/gatewayclasses/${name}`);
  await apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name },
    spec: {
      controllerName,
      ...(params === undefined
        ? {}
        : { parametersRef: { group: 'gateway.portico.io', kind: 'DataPlaneProxy', ...params } }),
    },
  } as never);
}

/**
 * A Gateway of `spec` (its class, listeners and any other field as given); `parameters`: a DataPlaneProxy of `ns`
 * the Gateway's infrastructure names (smallProxies makes one).
 */
export async function gatewayOf(
  cluster: Cluster,
  ns: string,
  name: string,
  spec: { gatewayClassName: string; listeners: object[]; [field: string]: unknown },
  parameters?: string,
): Promise<void> {
  await apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace: ns },
    spec: {
      ...spec,
      ...(parameters === undefined
        ? {}
        : {
            infrastructure: {
              parametersRef: { group: 'gateway.portico.io', kind: 'DataPlaneProxy', name: parameters },
            },
          }),
    },
  } as never);
}

/** A Gateway of HTTP listeners open to routes of every namespace (gatewayOf). */
export function gateway(
  cluster: Cluster,
  ns: string,
  name: string,
  className: string,
  listeners: { name: string; port: number; hostname?: string }[],
  parameters?: string,
): Promise<void> {
  const http = listeners.map((l) => ({
    ...l,
    protocol: 'HTTP',
    allowedRoutes: { namespaces: { from: 'All' } },
  }));
  return gatewayOf(cluster, ns, name, { gatewayClassName: className, listeners: http }, parameters);
}

/**
 * A DataPlaneProxy `name` in `ns` for small fleets: one worker per replica and a 10m CPU request, since the test
 * node's 2 CPUs hold the suites' proxies at their default 110m only up to 17 (Pending beyond).
 */
export async function smallProxies(cluster: Cluster, ns: string, name: string, replicas = 1): Promise<void> {
  const container = { resources: { requests: { cpu: '10m', memory: '32Mi' } } };
  await apply(cluster, {
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'DataPlaneProxy',
    metadata: { name, namespace: ns },
    spec: {
      workers: 1,
      kubernetes: { container, ...(replicas === 1 ? {} : { deployment: { replicas } }) },
    },
  } as never);
}

export async function route(
  cluster: Cluster,
  ns: string,
  name: string,
  parent: { namespace: string; name: string; sectionName?: string },
  hostname: string,
  backend: string,
): Promise<void> {
  await apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace: ns },
    spec: {
      parentRefs: [parent],
      hostnames: [hostname],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/' } }],
          backendRefs: [{ group: '', kind: 'Service', name: backend, port: 8080, weight: 1 }],
        },
      ],
    },
  } as never);
}

export async function gatewayStatus(cluster: Cluster, ns: string, name: string): Promise<Loose> {
  const r = await call(
    cluster,
    'GET',
    `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/gateways/${name}`,
  );
  return r.body;
}

export function condition(object: Loose, type: string): Loose | undefined {
  return asList(object.status?.conditions).find((c) => c.type === type);
}

/** Waits for Programmed=True and returns the Gateway's address. */
export async function programmedAddress(
  cluster: Cluster,
  ns: string,
  name: string,
  timeoutMs = 90_000,
): Promise<string> {
  return eventually(
    async () => {
      const gw = await gatewayStatus(cluster, ns, name);
      const address = asList(gw.status?.addresses)[0]?.value;
      const programmed = condition(gw, 'Programmed');
      if (programmed?.status === 'True' && typeof address === 'string') return String(address);
      // Thrown, so a timeout says where the Gateway stood (eventually keeps the last error).
      throw new Error(`Programmed ${programmed?.status} ${programmed?.reason}: ${programmed?.message}`);
    },
    `Gateway ${ns}/${name} Programmed`,
    timeoutMs,
  );
}

/** Waits until the Host answers 200 through the address (the proxy has the route). */
export async function served(address: string, port: number, host: string): Promise<Reply> {
  return eventually(
    async () => {
      const r = await get(address, port, host);
      return r.status === 200 ? r : undefined;
    },
    `${host} through ${address}:${port}`,
    30_000,
  );
}

/** Whether HTTPRoute `ns/name` shows Portico's Accepted=True for its current generation. */
export async function routeAccepted(cluster: Cluster, ns: string, name: string): Promise<boolean> {
  const r = (
    await call(cluster, 'GET', `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/httproutes/${name}`)
  ).body;
  return asList(r.status?.parents).some(
    (p) =>
      p.controllerName === DEFAULT_CONTROLLER_NAME &&
      asList(p.conditions).some(
        (c) =>
          c.type === 'Accepted' && c.status === 'True' && c.observedGeneration === r.metadata?.generation,
      ),
  );
}

/** The controller's /metrics through its metrics Service in `namespace`, in the Prometheus text format. */
export async function controllerMetrics(cluster: Cluster, namespace: string): Promise<Sample[]> {
  const service = await call(
    cluster,
    'GET',
    `/api/v1/namespaces/${namespace}/services/portico-gateway-metrics`,
  );
  assert.equal(service.status, 200, `Service ${namespace}/portico-gateway-metrics`);
  const ip = String(service.body.spec?.clusterIP);
  const reply = await httpRequest(19001, '/metrics', { address: ip, host: ip, timeoutMs: 5000 });
  assert.equal(reply.status, 200);
  assert.match(String(reply.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  return parsePrometheus(reply.body);
}

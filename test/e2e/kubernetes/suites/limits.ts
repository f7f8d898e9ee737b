// ClientTrafficPolicy and RateLimitPolicy on the real cluster, through a real Gateway: the CRDs the chart installs
// take them, the controller watches them and says Accepted in status.ancestors, a RateLimitPolicy's Local limit
// answers 429 (with the RateLimit fields) after its requests, and a route's ClientTrafficPolicy body limit 413.
// A Global RateLimitPolicy naming a Redis Service in the cluster (the toolchain's image of Debian's redis-server,
// its password from a labelled Secret) holds its limit across a Gateway's two proxy replicas.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import { containerPort } from '../../../../src/ir/fleet-infra.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually, type Loose } from '../../../cluster/kube-api.js';
import { httpRequest } from '../../../support/http.js';
import { E2E_SKIP } from '../install.js';
import {
  apply,
  echoNamespace,
  gateway,
  gatewayClass,
  podDeployment,
  programmedAddress,
  route,
  served,
  smallProxies,
} from '../traffic.js';

const NS = 'limits-e2e';
const HOST = 'limits.example.com';
/** The Gateway's name, unique among the suites: its proxy pods live in the controller's namespace. */
const GATEWAY = 'limits';
const REQUESTS = 3;
/** The Gateway of two replicas sharing a Global limit through Redis, and that limit (leases of 1 token). */
const GLOBAL_GATEWAY = 'limits-global';
const GLOBAL_HOST = 'global.limits.example.com';
const GLOBAL_REQUESTS = 20;
let cluster: Cluster;
let system: string;

const target = (kind: string, name: string) => ({ group: 'gateway.networking.k8s.io', kind, name });

/** Runs in the file's before(), once Portico is installed. */
export async function setup(c: Cluster, controllerNamespace: string): Promise<void> {
  cluster = c;
  system = controllerNamespace;
  await gatewayClass(cluster, 'portico', DEFAULT_CONTROLLER_NAME);
  await echoNamespace(cluster, NS);
  await gateway(cluster, NS, GATEWAY, 'portico', [{ name: 'http', port: 80 }]);
  await route(cluster, NS, 'app', { namespace: NS, name: GATEWAY }, HOST, 'echo');
  await apply(cluster, {
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'RateLimitPolicy',
    metadata: { name: 'app', namespace: NS },
    spec: {
      targetRefs: [target('HTTPRoute', 'app')],
      // Keyed by a header: the body-limit request below has its own bucket (a limit is checked before the body).
      rules: [
        {
          name: 'per-client',
          keys: [{ type: 'Header', name: 'x-client' }],
          requests: REQUESTS,
          period: '1h',
        },
      ],
    },
  } as never);
  await apply(cluster, {
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'ClientTrafficPolicy',
    metadata: { name: 'app-body', namespace: NS },
    spec: { targetRefs: [target('HTTPRoute', 'app')], limits: { maxRequestBodyBytes: 1024 } },
  } as never);
  await globalSetup();
}

/** Redis (password from a Secret), a Gateway of two replicas, its route and a Global RateLimitPolicy. */
async function globalSetup(): Promise<void> {
  const image = cluster.toolchain.images.redis?.names[0];
  if (image === undefined) throw new Error('no redis image in the toolchain: run `npm run toolchain`');
  // The controller reads a non-TLS Secret only with this label (docs/limits.md).
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'redis-auth', namespace: NS, labels: { 'gateway.portico.io/credentials': 'true' } },
    stringData: { password: 'e2e-redis-password' },
  } as never);
  const redis = {
    name: 'redis',
    image,
    args: ['--port', '6379', '--bind', '0.0.0.0', '--protected-mode', 'no', '--save', ''].concat([
      '--appendonly',
      'no',
      '--requirepass',
      '$(REDIS_PASSWORD)',
    ]),
    env: [{ name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'redis-auth', key: 'password' } } }],
  };
  await podDeployment(cluster, NS, 'redis', redis, 6379);
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'redis', namespace: NS },
    spec: { selector: { app: 'redis' }, ports: [{ name: 'redis', port: 6379, targetPort: 6379 }] },
  } as never);
  // One worker per replica: each replica is one holder of leases (docs/limits.md, the bound).
  await smallProxies(cluster, NS, 'two-replicas', 2);
  await gateway(cluster, NS, GLOBAL_GATEWAY, 'portico', [{ name: 'http', port: 80 }], 'two-replicas');
  await route(cluster, NS, 'global-app', { namespace: NS, name: GLOBAL_GATEWAY }, GLOBAL_HOST, 'echo');
  await apply(cluster, {
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'RateLimitPolicy',
    metadata: { name: 'global-app', namespace: NS },
    spec: {
      targetRefs: [target('HTTPRoute', 'global-app')],
      redis: { serviceRef: { name: 'redis', port: 6379 }, passwordSecretRef: { name: 'redis-auth' } },
      rules: [
        {
          name: 'per-client',
          keys: [{ type: 'Header', name: 'x-client' }],
          requests: GLOBAL_REQUESTS,
          period: '1h',
          scope: 'Global',
        },
      ],
    },
  } as never);
}

/** The policy's Accepted condition status as Portico wrote it for the Gateway. */
async function accepted(plural: string, name: string): Promise<string | undefined> {
  const r = await call(
    cluster,
    'GET',
    `/apis/gateway.portico.io/v1alpha1/namespaces/${NS}/${plural}/${name}`,
  );
  const ancestor = asList(r.body.status?.ancestors)[0];
  return asList(ancestor?.conditions).find((x) => x.type === 'Accepted')?.status as string | undefined;
}

test('RateLimitPolicy 429 after its requests and ClientTrafficPolicy 413 over its body limit, through a Gateway', {
  skip: E2E_SKIP,
}, async () => {
  const address = await programmedAddress(cluster, NS, GATEWAY, 120_000);
  await eventually(
    async () =>
      (await accepted('ratelimitpolicies', 'app')) === 'True' &&
      (await accepted('clienttrafficpolicies', 'app-body')) === 'True'
        ? true
        : undefined,
    'both policies Accepted',
    60_000,
  );
  // The first request served spends a token too: count from it.
  const first = await served(address, 80, HOST);
  assert.match(String(first.headers.ratelimit), /^"limits-e2e\/app\/per-client";r=\d+;t=\d+$/);
  const statuses = [first.status];
  // One proxy (all its workers) holds exactly REQUESTS; a fleet of several replicas holds it per replica.
  for (let i = 0; i < 10 && !statuses.includes(429); i++)
    statuses.push((await httpRequest(80, '/', { address, host: HOST, timeoutMs: 5000 })).status);
  assert.deepEqual(statuses.slice(0, REQUESTS), Array(REQUESTS).fill(200), statuses.join(','));
  assert.equal(statuses.at(-1), 429, statuses.join(','));

  const big = await httpRequest(80, '/', {
    address,
    host: HOST,
    method: 'POST',
    headers: { 'x-client': 'uploader' },
    body: 'x'.repeat(2000),
    timeoutMs: 5000,
  });
  assert.equal(big.status, 413);
});

/** The Gateway's ready proxy pods, each with the address its HTTP listener (port 80) binds in the pod. */
async function proxyReplicas(): Promise<{ name: string; ip: string; port: number }[]> {
  const selector = `gateway.portico.io/owning-gateway-namespace=${NS},gateway.portico.io/owning-gateway-name=${GLOBAL_GATEWAY}`;
  const r = await call(
    cluster,
    'GET',
    `/api/v1/namespaces/${system}/pods?labelSelector=${encodeURIComponent(selector)}`,
  );
  return asList(r.body.items)
    .filter(
      (p: Loose) =>
        p.metadata?.deletionTimestamp === undefined &&
        asList(p.status?.conditions).some((c) => c.type === 'Ready' && c.status === 'True'),
    )
    .map((p: Loose) => ({
      name: String(p.metadata?.name),
      ip: String(p.status?.podIP),
      // The pod lists no listener port (the Service maps 80 to it): where the proxy binds listener port 80.
      port: containerPort(80),
    }));
}

test('a Global RateLimitPolicy holds its limit across two proxy replicas through a Redis in the cluster', {
  skip: E2E_SKIP,
}, async () => {
  await programmedAddress(cluster, NS, GLOBAL_GATEWAY, 120_000);
  await eventually(
    async () => ((await accepted('ratelimitpolicies', 'global-app')) === 'True' ? true : undefined),
    'the Global policy Accepted (not Invalid: its Global rule would hold per replica)',
    60_000,
  );
  const replicas = await eventually(
    async () => {
      const ready = await proxyReplicas();
      return ready.length === 2 ? ready : undefined;
    },
    'two ready proxy replicas',
    120_000,
  );
  const get = (n: number, client: string) =>
    httpRequest(replicas[n]!.port, '/', {
      address: replicas[n]!.ip,
      host: GLOBAL_HOST,
      headers: { 'x-client': client },
      timeoutMs: 5000,
    });
  // Each replica serves the route (its own probe client: the shared one's budget stays whole).
  for (const n of [0, 1])
    await eventually(
      async () => ((await get(n, `probe-${n}`)).status === 200 ? true : undefined),
      `replica ${replicas[n]!.name} serving`,
      60_000,
    );
  // Alternating between the two pods until both refuse: exactly the limit together (never more), both serving.
  const allowed = [0, 0];
  const refused = [false, false];
  for (let i = 0; !(refused[0] && refused[1]) && i < 3 * GLOBAL_REQUESTS; i++) {
    const status = (await get(i % 2, 'shared')).status;
    if (status === 200) allowed[i % 2]!++;
    else if (status === 429) refused[i % 2] = true;
    else assert.fail(`replica ${replicas[i % 2]!.name}: HTTP ${status}`);
  }
  assert.deepEqual(refused, [true, true], `allowed ${allowed}`);
  assert.equal(allowed[0]! + allowed[1]!, GLOBAL_REQUESTS, `allowed ${allowed}`);
  assert.ok(allowed[0]! > 0 && allowed[1]! > 0, `allowed ${allowed}`);
  // Its two proxies and Redis go: the suites after this one need the node's CPU for their own Gateways.
  await call(
    cluster,
    'DELETE',
    `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/gateways/${GLOBAL_GATEWAY}`,
  );
  await call(cluster, 'DELETE', `/apis/apps/v1/namespaces/${NS}/deployments/redis`);
});

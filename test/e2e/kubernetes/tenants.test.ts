// Separate controllers: two tenants, each controller in its own namespace with its own controller name and a
// watch restricted to that namespace; also deletion cleanup and observedGeneration following edits.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Cluster } from '../../cluster/harness.js';
import { asList, call, eventually } from '../../cluster/kube-api.js';
import { E2E_SKIP, install } from './install.js';
import { kubernetesE2e } from './preamble.js';
import {
  condition,
  echoBackend,
  gateway,
  gatewayClass,
  gatewayStatus,
  get,
  namespace,
  programmedAddress,
  route,
  served,
} from './traffic.js';

let cluster: Cluster;
const controllerOf = (tenant: string) => `gateway.portico.io/${tenant}-gatewayclass-controller`;

kubernetesE2e(async (leased) => {
  cluster = leased;
  for (const tenant of ['tenant-a', 'tenant-b']) {
    await install(cluster, {
      release: `portico-${tenant}`,
      namespace: tenant,
      set: [
        `config.controllerName=${controllerOf(tenant)}`,
        'config.watch.type=Namespaces',
        `config.watch.namespaces={${tenant}}`,
      ],
    });
    await echoBackend(cluster, tenant, 'echo');
    await gatewayClass(cluster, `${tenant}-class`, controllerOf(tenant));
  }
});

test("each tenant's hostname works through its own Gateway and is 404 through the other's", {
  skip: E2E_SKIP,
}, async () => {
  for (const tenant of ['tenant-a', 'tenant-b']) {
    await gateway(cluster, tenant, 'gw', `${tenant}-class`, [{ name: 'http', port: 80 }]);
    await route(cluster, tenant, 'web', { namespace: tenant, name: 'gw' }, `${tenant}.example.com`, 'echo');
  }
  const a = await programmedAddress(cluster, 'tenant-a', 'gw');
  const b = await programmedAddress(cluster, 'tenant-b', 'gw');
  const viaA = await served(a, 80, 'tenant-a.example.com');
  assert.equal((JSON.parse(viaA.body) as { namespace: string }).namespace, 'tenant-a');
  await served(b, 80, 'tenant-b.example.com');
  assert.equal((await get(a, 80, 'tenant-b.example.com')).status, 404);
  assert.equal((await get(b, 80, 'tenant-a.example.com')).status, 404);
  // Each tenant's proxies live in its own controller namespace.
  const services = await call(cluster, 'GET', '/api/v1/namespaces/tenant-a/services');
  assert.ok(
    asList(services.body.items).some((s) => String(s.metadata?.name).startsWith('proxy-tenant-a-gw-')),
  );
});

test('a namespaced watch ignores resources in unwatched namespaces', { skip: E2E_SKIP }, async () => {
  await namespace(cluster, 'outside');
  await gateway(cluster, 'outside', 'stray', 'tenant-a-class', [{ name: 'http', port: 80 }]);
  // A later change in a watched namespace proves the controller is running; the stray Gateway stays untouched.
  await gateway(cluster, 'tenant-a', 'probe', 'tenant-a-class', [{ name: 'http', port: 8080 }]);
  await programmedAddress(cluster, 'tenant-a', 'probe');
  const stray = await gatewayStatus(cluster, 'outside', 'stray');
  // Its status stays as the CRD defaults it: no controller wrote it.
  assert.equal(condition(stray, 'Accepted')?.reason, 'Pending');
  assert.equal(condition(stray, 'Accepted')?.status, 'Unknown');
  const infra = await call(cluster, 'GET', '/api/v1/namespaces/tenant-a/services');
  assert.ok(
    !asList(infra.body.items).some((s) => String(s.metadata?.name).startsWith('proxy-outside-stray-')),
  );
});

test('observedGeneration follows edits, and deleting a Gateway removes its infrastructure', {
  skip: E2E_SKIP,
}, async () => {
  await gateway(cluster, 'tenant-a', 'probe', 'tenant-a-class', [
    { name: 'http', port: 8080 },
    { name: 'http-2', port: 8081 },
  ]);
  await eventually(
    async () => {
      const gw = await gatewayStatus(cluster, 'tenant-a', 'probe');
      const generation = gw.metadata?.generation;
      return Number(generation) >= 2 && condition(gw, 'Accepted')?.observedGeneration === generation
        ? true
        : undefined;
    },
    'observedGeneration of the edited Gateway',
    30_000,
  );
  await call(cluster, 'DELETE', '/apis/gateway.networking.k8s.io/v1/namespaces/tenant-a/gateways/probe');
  await eventually(
    async () => {
      const deployments = await call(cluster, 'GET', '/apis/apps/v1/namespaces/tenant-a/deployments');
      const left = asList(deployments.body.items).some((d) =>
        String(d.metadata?.name).startsWith('proxy-tenant-a-probe-'),
      );
      return left ? undefined : true;
    },
    'the deleted Gateway’s Deployment to go',
    30_000,
  );
  await eventually(
    async () => {
      const pods = await call(cluster, 'GET', '/api/v1/namespaces/tenant-a/pods');
      const left = asList(pods.body.items).some((d) =>
        String(d.metadata?.name).startsWith('proxy-tenant-a-probe-'),
      );
      return left ? undefined : true;
    },
    'the deleted Gateway’s pods to drain and go',
    90_000,
  );
});

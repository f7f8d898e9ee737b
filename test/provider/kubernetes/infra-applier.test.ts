// The infra applier never takes over an object of the fleet's name that another fleet's labels own (a name
// collision with another controller's fleet in a shared namespace): the fleet reports it and applies nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FleetInfra } from '../../../src/ir/fleet-infra.js';
import { COMMON_INFRA_LABELS } from '../../../src/ir/fleet-infra.js';
import { discardingLogger } from '../../../src/platform/log-line.js';
import type { ApiClient } from '../../../src/provider/kubernetes/api-client.js';
import { createInfraApplier } from '../../../src/provider/kubernetes/infra-applier.js';
import { createFakeKubernetesApi } from '../../support/fake-kubernetes-api.js';

const infra: FleetInfra = {
  fleet: 'tenant-a/newer',
  name: 'proxy-tenant-a-shared-a3cb2abb',
  namespace: 'tenant-a',
  labels: {
    ...COMMON_INFRA_LABELS,
    'gateway.portico.io/owning-gateway-namespace': 'tenant-a',
    'gateway.portico.io/owning-gateway-name': 'newer',
  },
  propagated: { labels: {}, annotations: {} },
  gateways: ['tenant-a/newer'],
  ports: [{ name: 'http-80', port: 80, protocol: 'TCP', containerPort: 10080 }],
};

/** An API server where the fleet's ServiceAccount, Service and Deployment exist with `existingLabels`. */
function fakeClient(existingLabels: Record<string, string>) {
  const api = createFakeKubernetesApi();
  for (const collection of [
    '/api/v1/namespaces/tenant-a/serviceaccounts',
    '/api/v1/namespaces/tenant-a/services',
    '/apis/apps/v1/namespaces/tenant-a/deployments',
  ])
    api.objects.set(`${collection}/${infra.name}`, {
      metadata: { name: infra.name, namespace: 'tenant-a', uid: 'u', labels: existingLabels },
    });
  return {
    client: api.client,
    get writes(): string[] {
      return api.writes();
    },
  };
}

function applier(client: ApiClient) {
  return createInfraApplier({
    client,
    proxy: { image: 'portico:test' },
    controllerNamespace: 'portico-gateway-system',
    deployType: 'GatewayNamespace',
    caPem: 'ca',
    log: discardingLogger,
  });
}

test('an object of the same name owned by another fleet is left alone and reported, naming that fleet', async () => {
  const server = fakeClient({
    ...COMMON_INFRA_LABELS,
    'gateway.portico.io/owning-gateway-namespace': 'tenant-a',
    'gateway.portico.io/owning-gateway-name': 'older',
  });
  const applying = applier(server.client);
  await applying.sync([infra]);
  await applying.idle();
  const problems = await applying.sync([infra]);
  assert.equal(problems.get('tenant-a/newer')?.reason, 'Invalid');
  assert.match(
    problems.get('tenant-a/newer')?.message ?? '',
    /^ServiceAccount tenant-a\/proxy-tenant-a-shared-a3cb2abb already exists for fleet tenant-a\/older/,
  );
  assert.deepEqual(
    server.writes.filter((w) => w.includes(infra.name)),
    [],
  );
  applying.stop();
});

test('the fleet’s own objects are applied as before', async () => {
  const server = fakeClient(infra.labels);
  const applying = applier(server.client);
  await applying.sync([infra]);
  await applying.idle();
  assert.deepEqual([...(await applying.sync([infra]))], []);
  assert.equal(server.writes.filter((w) => w.startsWith('PATCH') && w.includes(infra.name)).length, 3);
  applying.stop();
});

test('a Cluster address asked by value is the new Service’s cluster IP only inside a ServiceCIDR; a made one keeps its own', async () => {
  const servicePath = `/api/v1/namespaces/tenant-a/services/${infra.name}`;
  const clusterIPOf = async (requested: string, existing?: string) => {
    const api = createFakeKubernetesApi();
    api.objects.set('/apis/networking.k8s.io/v1/servicecidrs/kubernetes', {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'ServiceCIDR',
      metadata: { name: 'kubernetes' },
      spec: { cidrs: ['10.96.0.0/16', 'fd00:10:96::/112'] },
    });
    if (existing !== undefined)
      api.objects.set(servicePath, {
        metadata: { name: infra.name, namespace: 'tenant-a', uid: 'u', labels: infra.labels },
        spec: { clusterIP: existing },
      });
    const applying = applier(api.client);
    await applying.sync([{ ...infra, requestedClusterIP: requested }]);
    await applying.idle();
    applying.stop();
    return ((api.objects.get(servicePath)?.spec ?? {}) as { clusterIP?: string }).clusterIP;
  };
  assert.equal(await clusterIPOf('10.96.0.77'), '10.96.0.77');
  assert.equal(await clusterIPOf('fd00:10:96::77'), 'fd00:10:96::77');
  assert.equal(
    await clusterIPOf('192.0.2.1'),
    undefined,
    'outside every ServiceCIDR: left to the API server',
  );
  assert.equal(await clusterIPOf('10.96.0.77', '10.96.0.5'), '10.96.0.5', 'immutable once made');
});

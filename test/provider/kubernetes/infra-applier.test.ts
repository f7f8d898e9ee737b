// The infra applier never takes over an object of the fleet's name that another fleet's labels own (a name
// collision with another controller's fleet in a shared namespace): the fleet reports it and applies nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FleetInfra } from '../../../src/ir/fleet-infra.js';
import { COMMON_INFRA_LABELS } from '../../../src/ir/fleet-infra.js';
import { discardingLogger } from '../../../src/platform/log-line.js';
import type { ApiClient, JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { createInfraApplier } from '../../../src/provider/kubernetes/infra-applier.js';

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

function fakeClient(existingLabels: Record<string, string>): { client: ApiClient; writes: string[] } {
  const writes: string[] = [];
  const client: ApiClient = {
    async request(method, path) {
      if (method === 'GET' && path.includes('?labelSelector=')) return { status: 200, body: { items: [] } };
      // The fleet has none of the kinds a DataPlaneProxy's shape adds (a DaemonSet, an autoscaler, a budget).
      if (method === 'GET' && /daemonsets|horizontalpodautoscalers|poddisruptionbudgets/.test(path))
        return { status: 404, body: {} };
      if (method === 'GET' && path.includes(infra.name)) {
        const body: JsonObject = { metadata: { name: infra.name, uid: 'u', labels: existingLabels } };
        return { status: 200, body };
      }
      if (method === 'GET') return { status: 404, body: {} };
      writes.push(`${method} ${path}`);
      return { status: 200, body: { metadata: { uid: 'u' } } };
    },
    watch() {
      throw new Error('not watched here');
    },
  };
  return { client, writes };
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
  const { client, writes } = fakeClient({
    ...COMMON_INFRA_LABELS,
    'gateway.portico.io/owning-gateway-namespace': 'tenant-a',
    'gateway.portico.io/owning-gateway-name': 'older',
  });
  const applying = applier(client);
  await applying.sync([infra]);
  await applying.idle();
  const problems = await applying.sync([infra]);
  assert.equal(problems.get('tenant-a/newer')?.reason, 'Invalid');
  assert.match(
    problems.get('tenant-a/newer')?.message ?? '',
    /^ServiceAccount tenant-a\/proxy-tenant-a-shared-a3cb2abb already exists for fleet tenant-a\/older/,
  );
  assert.deepEqual(
    writes.filter((w) => w.includes(infra.name)),
    [],
  );
  applying.stop();
});

test('the fleet’s own objects are applied as before', async () => {
  const { client, writes } = fakeClient(infra.labels);
  const applying = applier(client);
  await applying.sync([infra]);
  await applying.idle();
  assert.deepEqual([...(await applying.sync([infra]))], []);
  assert.equal(writes.filter((w) => w.startsWith('PATCH') && w.includes(infra.name)).length, 3);
  applying.stop();
});

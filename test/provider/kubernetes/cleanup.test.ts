// `portico cleanup` removes every kind a fleet may have, its shape's DaemonSet, autoscaler and budget included,
// each found by the controller-namespace label in every namespace it looks at.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { discardingLogger } from '../../../src/platform/log-line.js';
import type { ApiClient, ApiReply } from '../../../src/provider/kubernetes/api-client.js';
import { removeControllerObjects } from '../../../src/provider/kubernetes/cleanup.js';

test('cleanup lists and deletes DaemonSets, HPAs and PDBs with the other fleet kinds', async () => {
  const requests: string[] = [];
  const client: ApiClient = {
    async request(method, path): Promise<ApiReply> {
      requests.push(`${method} ${path.split('?')[0]}`);
      if (method === 'GET' && path.includes('/horizontalpodautoscalers?'))
        return {
          status: 200,
          body: { items: [{ metadata: { name: 'proxy-a-1234abcd', namespace: 'team-a' } }] },
        };
      if (method === 'GET') return { status: 200, body: { items: [] } };
      return { status: 200, body: {} };
    },
    watch() {
      throw new Error('not watched here');
    },
  };
  await removeControllerObjects({
    client,
    namespace: 'portico-gateway-system',
    controllerName: 'gateway.portico.io/gatewayclass-controller',
    controllerDeployment: 'portico-gateway',
    fleetNamespaces: ['team-a'],
    log: discardingLogger,
  });
  for (const collection of [
    '/apis/apps/v1/namespaces/team-a/daemonsets',
    '/apis/autoscaling/v2/namespaces/team-a/horizontalpodautoscalers',
    '/apis/policy/v1/namespaces/team-a/poddisruptionbudgets',
    '/apis/apps/v1/namespaces/team-a/deployments',
  ])
    assert.ok(requests.includes(`GET ${collection}`), collection);
  assert.ok(
    requests.includes(
      'DELETE /apis/autoscaling/v2/namespaces/team-a/horizontalpodautoscalers/proxy-a-1234abcd',
    ),
  );
});

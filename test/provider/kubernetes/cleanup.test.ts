// `portico cleanup` removes every kind a fleet may have, its shape's DaemonSet, autoscaler and budget included,
// each found by the controller-namespace label in every namespace it looks at.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CONTROLLER_NAMESPACE_LABEL } from '../../../src/infra/kubernetes/render.js';
import { discardingLogger } from '../../../src/platform/log-line.js';
import { removeControllerObjects } from '../../../src/provider/kubernetes/cleanup.js';
import { createFakeKubernetesApi } from '../../support/fake-kubernetes-api.js';

test('cleanup lists and deletes DaemonSets, HPAs and PDBs with the other fleet kinds', async () => {
  const api = createFakeKubernetesApi();
  // One autoscaler of a fleet of this controller (its namespace label), one of another controller's.
  const hpas = '/apis/autoscaling/v2/namespaces/team-a/horizontalpodautoscalers';
  api.objects.set(`${hpas}/proxy-a-1234abcd`, {
    metadata: {
      name: 'proxy-a-1234abcd',
      namespace: 'team-a',
      labels: { [CONTROLLER_NAMESPACE_LABEL]: 'portico-gateway-system' },
    },
  });
  api.objects.set(`${hpas}/proxy-b-5678abcd`, {
    metadata: {
      name: 'proxy-b-5678abcd',
      namespace: 'team-a',
      labels: { [CONTROLLER_NAMESPACE_LABEL]: 'other' },
    },
  });
  const client = api.client;
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
    assert.ok(
      api.requests.some((r) => r.method === 'GET' && r.bare === collection),
      collection,
    );
  assert.ok(api.writes().includes(`DELETE ${hpas}/proxy-a-1234abcd`), api.writes().join(', '));
  assert.ok(api.objects.has(`${hpas}/proxy-b-5678abcd`), "another controller's fleet stays");
});

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { asList, call } from './client.js';
import { type Cluster, CRD_FILES, startCluster } from './harness.js';
import { KUBECTL_SKIP, kubectl as runKubectl } from './kubectl.js';

let cluster: Cluster;
before(async () => {
  cluster = await startCluster({ workloads: false });
});
after(() => cluster.stop());

function kubectl(...args: string[]): ReturnType<typeof runKubectl> {
  return runKubectl(cluster.kubeconfigPath, ...args);
}

const RESOURCES = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portico}
spec: {controllerName: gateway.portico.io/gatewayclass-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: eg, namespace: default}
spec:
  gatewayClassName: portico
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: allow, namespace: default}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: other}]
  to: [{group: '', kind: Service}]
---
apiVersion: gateway.portico.io/v1alpha1
kind: DataPlaneProxy
metadata: {name: merged, namespace: default}
spec: {mergeGateways: true}
`;

test('the Gateway API and DataPlaneProxy CRDs install with kubectl; their kinds get a status subresource', {
  skip: KUBECTL_SKIP,
}, async () => {
  for (const file of CRD_FILES) {
    const r = await kubectl('apply', '-f', file);
    assert.equal(r.code, 0, r.err);
  }
  const file = join(cluster.dir, 'gateway.yaml');
  writeFileSync(file, RESOURCES);
  const applied = await kubectl('apply', '-f', file);
  assert.equal(applied.code, 0, applied.err);
  assert.match(applied.out, /gateway.gateway.networking.k8s.io\/eg created/);
  const short = await kubectl('get', 'gtw', 'eg', '-o', 'json');
  assert.equal(short.code, 0, short.err);
  assert.equal(JSON.parse(short.out).spec.gatewayClassName, 'portico');

  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const status = {
    status: {
      conditions: [
        {
          type: 'Accepted',
          status: 'True',
          reason: 'Accepted',
          message: '',
          observedGeneration: 1,
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    },
  };
  const gw = (await custom.getNamespacedCustomObject({
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    namespace: 'default',
    plural: 'gateways',
    name: 'eg',
  })) as { metadata: Record<string, unknown> };
  await custom.replaceNamespacedCustomObjectStatus({
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    namespace: 'default',
    plural: 'gateways',
    name: 'eg',
    body: { ...gw, ...status },
  });
  const after = (
    await call(cluster, 'GET', '/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways/eg')
  ).body;
  assert.equal(asList(after.status?.conditions)[0]?.type, 'Accepted');
  assert.equal(after.metadata?.generation, 1);

  const v1 = await call(
    cluster,
    'GET',
    '/apis/gateway.networking.k8s.io/v1/namespaces/default/referencegrants/allow',
  );
  assert.equal(
    v1.body.apiVersion,
    'gateway.networking.k8s.io/v1',
    'one stored object is served in every version',
  );
  const dpp = await call(
    cluster,
    'GET',
    '/apis/gateway.portico.io/v1alpha1/namespaces/default/dataplaneproxies/merged',
  );
  assert.equal(dpp.body.spec?.mergeGateways, true as unknown);
});

test('startCluster({ crds: true }) serves the kinds from the start', async () => {
  const other = await startCluster({ workloads: false, crds: true });
  try {
    const list = await call(other, 'GET', '/apis/gateway.networking.k8s.io/v1/gatewayclasses');
    assert.equal(list.status, 200);
    assert.equal(list.body.kind, 'GatewayClassList');
  } finally {
    await other.stop();
  }
});

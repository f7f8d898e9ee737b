import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asList, asObject, call } from './client.js';
import { type Cluster, startCluster } from './harness.js';

let cluster: Cluster;
before(async () => {
  cluster = await startCluster({ workloads: false });
});
after(() => cluster.stop());

const CM = '/api/v1/namespaces/default/configmaps';
const DEPLOY = '/apis/apps/v1/namespaces/default/deployments';

function deployment(name: string, labels: Record<string, string> = {}) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'c', image: 'x', env: [{ name: 'A', value: '1' }] }] },
      },
    },
  };
}

test('create, get, list, update and delete a ConfigMap; errors are Status objects', async () => {
  const created = await call(cluster, 'POST', CM, { metadata: { name: 'crud' }, data: { a: '1' } });
  assert.equal(created.status, 201);
  assert.match(String(created.body.metadata?.uid), /^[0-9a-f-]{36}$/);
  assert.ok(created.body.metadata?.creationTimestamp);
  const again = await call(cluster, 'POST', CM, { metadata: { name: 'crud' } });
  assert.equal(again.status, 409);
  assert.equal(again.body.kind, 'Status');
  assert.equal(again.body.reason, 'AlreadyExists');
  const got = await call(cluster, 'GET', `${CM}/crud`);
  assert.equal(got.body.data?.a, '1');
  const listed = await call(cluster, 'GET', CM);
  assert.equal(listed.body.kind, 'ConfigMapList');
  assert.ok(asList(listed.body.items).some((i) => i.metadata?.name === 'crud'));
  const updated = await call(cluster, 'PUT', `${CM}/crud`, { ...asObject(got.body), data: { a: '2' } });
  assert.equal(updated.status, 200);
  assert.ok(Number(updated.body.metadata?.resourceVersion) > Number(got.body.metadata?.resourceVersion));
  const deleted = await call(cluster, 'DELETE', `${CM}/crud`);
  assert.equal(deleted.status, 200);
  const missing = await call(cluster, 'GET', `${CM}/crud`);
  assert.equal(missing.status, 404);
  assert.equal(missing.body.reason, 'NotFound');
  assert.equal(missing.body.code, 404);
  assert.equal(missing.body.message, 'configmaps "crud" not found');
});

test('an update with a stale resourceVersion is a 409 Conflict', async () => {
  const v1 = (await call(cluster, 'POST', CM, { metadata: { name: 'stale' }, data: { a: '1' } })).body;
  const v2 = await call(cluster, 'PUT', `${CM}/stale`, { ...asObject(v1), data: { a: '2' } });
  assert.equal(v2.status, 200);
  const stale = await call(cluster, 'PUT', `${CM}/stale`, { ...asObject(v1), data: { a: '3' } });
  assert.equal(stale.status, 409);
  assert.equal(stale.body.reason, 'Conflict');
  assert.match(String(stale.body.message), /the object has been modified/);
  const stalePatch = await call(
    cluster,
    'PATCH',
    `${CM}/stale`,
    { metadata: { resourceVersion: v1.metadata?.resourceVersion } },
    {
      contentType: 'application/merge-patch+json',
    },
  );
  assert.equal(stalePatch.status, 409);
});

test('generation counts spec changes only; the status subresource changes only status', async () => {
  const created = (await call(cluster, 'POST', DEPLOY, deployment('gen'))).body;
  assert.equal(created.metadata?.generation, 1);
  const labelled = await call(
    cluster,
    'PATCH',
    `${DEPLOY}/gen`,
    { metadata: { labels: { x: 'y' } } },
    { contentType: 'application/merge-patch+json' },
  );
  assert.equal(labelled.body.metadata?.generation, 1);
  const scaled = await call(
    cluster,
    'PATCH',
    `${DEPLOY}/gen`,
    { spec: { replicas: 3 } },
    { contentType: 'application/merge-patch+json' },
  );
  assert.equal(scaled.body.metadata?.generation, 2);
  const viaMain = await call(
    cluster,
    'PATCH',
    `${DEPLOY}/gen`,
    { status: { replicas: 9 } },
    { contentType: 'application/merge-patch+json' },
  );
  assert.equal(viaMain.body.status, undefined, 'the main resource ignores status');
  const status = await call(
    cluster,
    'PATCH',
    `${DEPLOY}/gen/status`,
    { status: { replicas: 3, observedGeneration: 2 }, spec: { replicas: 7 } },
    {
      contentType: 'application/merge-patch+json',
    },
  );
  assert.equal(status.status, 200);
  assert.equal(status.body.status?.replicas, 3);
  assert.equal(status.body.spec?.replicas, 3, 'the status subresource ignores spec');
  assert.equal(status.body.metadata?.generation, 2);
});

test('JSON patch, strategic merge patch by merge key, and a no-op update keeps the resourceVersion', async () => {
  await call(cluster, 'POST', DEPLOY, deployment('patchy'));
  const smp = await call(
    cluster,
    'PATCH',
    `${DEPLOY}/patchy`,
    { spec: { template: { spec: { containers: [{ name: 'c', env: [{ name: 'B', value: '2' }] }] } } } },
    { contentType: 'application/strategic-merge-patch+json' },
  );
  assert.equal(smp.status, 200);
  const container = asList(smp.body.spec?.template?.spec?.containers)[0];
  assert.equal(container?.image, 'x');
  assert.deepEqual(
    asList(container?.env).map((e) => e.name),
    ['A', 'B'],
  );
  const jp = await call(
    cluster,
    'PATCH',
    `${DEPLOY}/patchy`,
    [{ op: 'replace', path: '/spec/replicas', value: 2 }],
    {
      contentType: 'application/json-patch+json',
    },
  );
  assert.equal(jp.body.spec?.replicas, 2);
  const badTest = await call(
    cluster,
    'PATCH',
    `${DEPLOY}/patchy`,
    [{ op: 'test', path: '/spec/replicas', value: 5 }],
    {
      contentType: 'application/json-patch+json',
    },
  );
  assert.equal(badTest.status, 422);
  const same = await call(cluster, 'PUT', `${DEPLOY}/patchy`, asObject(jp.body));
  assert.equal(same.body.metadata?.resourceVersion, jp.body.metadata?.resourceVersion);
});

test('server-side apply creates, merges, reports conflicts and honours force', async () => {
  const path = `${CM}/applied?fieldManager=alice`;
  const yaml = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: "1"\n  b: "2"\n';
  const created = await call(cluster, 'PATCH', path, yaml, { contentType: 'application/apply-patch+yaml' });
  assert.equal(created.status, 201);
  assert.equal(asList(created.body.metadata?.managedFields)[0]?.manager, 'alice');
  const bob = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'applied' },
    data: { a: 'bob', c: '3' },
  };
  const conflict = await call(cluster, 'PATCH', `${CM}/applied?fieldManager=bob`, bob, {
    contentType: 'application/apply-patch+yaml',
  });
  assert.equal(conflict.status, 409);
  assert.match(String(conflict.body.message), /conflict with "alice"/);
  const forced = await call(cluster, 'PATCH', `${CM}/applied?fieldManager=bob&force=true`, bob, {
    contentType: 'application/apply-patch+yaml',
  });
  assert.equal(forced.status, 200);
  assert.deepEqual(forced.body.data, { a: 'bob', b: '2', c: '3' });
  const aliceDropsB = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata: {}\n';
  const dropped = await call(cluster, 'PATCH', path, aliceDropsB, {
    contentType: 'application/apply-patch+yaml',
  });
  assert.deepEqual(dropped.body.data, { a: 'bob', c: '3' }, 'a field its manager stops applying is removed');
  const noManager = await call(cluster, 'PATCH', `${CM}/applied`, yaml, {
    contentType: 'application/apply-patch+yaml',
  });
  assert.equal(noManager.status, 400);
});

test('label selectors (=, !=, in, notin, exists, !exists) and field selectors', async () => {
  const make = (name: string, labels: Record<string, string>) =>
    call(cluster, 'POST', CM, { metadata: { name, labels } });
  await make('sel-a', { tier: 'web', env: 'prod' });
  await make('sel-b', { tier: 'db', env: 'dev' });
  await make('sel-c', { tier: 'cache' });
  const names = async (query: string) =>
    asList((await call(cluster, 'GET', `${CM}?${query}`)).body.items)
      .map((i) => String(i.metadata?.name))
      .filter((n) => n.startsWith('sel-'));
  assert.deepEqual(await names('labelSelector=tier%3Dweb'), ['sel-a']);
  assert.deepEqual(await names('labelSelector=tier!%3Dweb'), ['sel-b', 'sel-c']);
  assert.deepEqual(await names(`labelSelector=${encodeURIComponent('tier in (web,db)')}`), [
    'sel-a',
    'sel-b',
  ]);
  assert.deepEqual(await names(`labelSelector=${encodeURIComponent('tier notin (web,db),env')}`), []);
  assert.deepEqual(await names('labelSelector=env'), ['sel-a', 'sel-b']);
  assert.deepEqual(await names('labelSelector=!env'), ['sel-c']);
  assert.deepEqual(await names('fieldSelector=metadata.name%3Dsel-b'), ['sel-b']);
  const all = await call(cluster, 'GET', '/api/v1/configmaps?fieldSelector=metadata.namespace%3Dkube-system');
  assert.ok(asList(all.body.items).every((i) => i.metadata?.namespace === 'kube-system'));
  const bad = await call(cluster, 'GET', `${CM}?fieldSelector=spec.nodeName%3Dx`);
  assert.equal(bad.status, 400);
});

test('discovery lists built-in groups and CRD kinds; CRD objects are served at once with status', async () => {
  const api = await call(cluster, 'GET', '/api/v1');
  assert.ok(asList(api.body.resources).some((r) => r.name === 'serviceaccounts/token'));
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object' } },
        },
      ],
    },
  };
  const created = await call(cluster, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
  assert.equal(created.status, 201);
  assert.ok(
    asList(created.body.status?.conditions).some((c) => c.type === 'Established' && c.status === 'True'),
  );
  const groups = await call(cluster, 'GET', '/apis');
  assert.ok(asList(groups.body.groups).some((g) => g.name === 'example.com'));
  const w = await call(cluster, 'POST', '/apis/example.com/v1/namespaces/default/widgets', {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w1' },
    spec: { size: 1 },
  });
  assert.equal(w.status, 201);
  const smp = await call(
    cluster,
    'PATCH',
    '/apis/example.com/v1/namespaces/default/widgets/w1',
    { spec: { size: 2 } },
    {
      contentType: 'application/strategic-merge-patch+json',
    },
  );
  assert.equal(smp.status, 415, 'strategic merge patch is not supported for custom resources');
  await call(
    cluster,
    'DELETE',
    '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com',
  );
  const gone = await call(cluster, 'GET', '/apis/example.com/v1/namespaces/default/widgets/w1');
  assert.equal(gone.status, 404);
});

test('requests without a valid token get 401; unknown resources 404', async () => {
  const anonymous = await call(cluster, 'GET', CM, undefined, { token: 'nope' });
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.body.reason, 'Unauthorized');
  const unknown = await call(cluster, 'GET', '/apis/nothing.example/v1/things');
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.kind, 'Status');
});

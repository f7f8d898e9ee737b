import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { call, eventually, type Loose } from './client.js';
import { type Cluster, startCluster } from './harness.js';

let cluster: Cluster;
before(async () => {
  cluster = await startCluster({ workloads: false });
});
after(() => cluster.stop());

const CM = '/api/v1/namespaces/default/configmaps';

async function owned(name: string, owner: Loose) {
  return call(cluster, 'POST', CM, {
    metadata: {
      name,
      ownerReferences: [
        { apiVersion: 'v1', kind: 'ConfigMap', name: owner.metadata?.name, uid: owner.metadata?.uid },
      ],
    },
  });
}

test('deleting an owner deletes its dependents in cascade (background); Orphan keeps them', async () => {
  const root = (await call(cluster, 'POST', CM, { metadata: { name: 'gc-root' } })).body;
  const child = (await owned('gc-child', root)).body;
  await owned('gc-grandchild', child);
  await call(cluster, 'DELETE', `${CM}/gc-root`);
  await eventually(
    async () => ((await call(cluster, 'GET', `${CM}/gc-grandchild`)).status === 404 ? true : undefined),
    'cascade',
  );
  assert.equal((await call(cluster, 'GET', `${CM}/gc-child`)).status, 404);

  const keeper = (await call(cluster, 'POST', CM, { metadata: { name: 'gc-keeper' } })).body;
  await owned('gc-orphan', keeper);
  await call(cluster, 'DELETE', `${CM}/gc-keeper`, { propagationPolicy: 'Orphan' });
  await new Promise((r) => setTimeout(r, 100));
  const orphan = await call(cluster, 'GET', `${CM}/gc-orphan`);
  assert.equal(orphan.status, 200);
  assert.equal(orphan.body.metadata?.ownerReferences, undefined);
});

test('a finalizer holds deletion until it is removed', async () => {
  await call(cluster, 'POST', CM, { metadata: { name: 'fin', finalizers: ['example.com/hold'] } });
  const deleting = await call(cluster, 'DELETE', `${CM}/fin`);
  assert.ok(deleting.body.metadata?.deletionTimestamp);
  const still = await call(cluster, 'GET', `${CM}/fin`);
  assert.equal(still.status, 200);
  await call(
    cluster,
    'PATCH',
    `${CM}/fin`,
    { metadata: { finalizers: null } },
    { contentType: 'application/merge-patch+json' },
  );
  assert.equal((await call(cluster, 'GET', `${CM}/fin`)).status, 404);
});

test('deleting a namespace deletes its objects, refuses new ones, then disappears', async () => {
  await call(cluster, 'POST', '/api/v1/namespaces', { metadata: { name: 'doomed' } });
  await call(cluster, 'POST', '/api/v1/namespaces/doomed/configmaps', { metadata: { name: 'a' } });
  await call(cluster, 'POST', '/api/v1/namespaces/doomed/configmaps', {
    metadata: { name: 'held', finalizers: ['x/y'] },
  });
  const deleting = await call(cluster, 'DELETE', '/api/v1/namespaces/doomed');
  assert.ok(deleting.body.metadata?.deletionTimestamp);
  const refused = await call(cluster, 'POST', '/api/v1/namespaces/doomed/configmaps', {
    metadata: { name: 'late' },
  });
  assert.equal(refused.status, 403);
  await eventually(
    async () =>
      (await call(cluster, 'GET', '/api/v1/namespaces/doomed/configmaps/a')).status === 404
        ? true
        : undefined,
    'objects deleted',
  );
  const ns = await call(cluster, 'GET', '/api/v1/namespaces/doomed');
  assert.equal(ns.body.status?.phase, 'Terminating');
  await call(
    cluster,
    'PATCH',
    '/api/v1/namespaces/doomed/configmaps/held',
    { metadata: { finalizers: [] } },
    { contentType: 'application/merge-patch+json' },
  );
  await eventually(
    async () => ((await call(cluster, 'GET', '/api/v1/namespaces/doomed')).status === 404 ? true : undefined),
    'namespace gone',
  );
});

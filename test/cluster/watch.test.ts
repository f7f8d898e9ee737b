import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { call, watch } from './client.js';
import { type Cluster, startCluster } from './harness.js';

let cluster: Cluster;
before(async () => {
  cluster = await startCluster({ workloads: false, historySize: 20, bookmarkIntervalMs: 100 });
});
after(() => cluster.stop());

const CM = '/api/v1/namespaces/default/configmaps';

test('a watch sends ADDED for existing objects, then MODIFIED and DELETED as they happen', async () => {
  await call(cluster, 'POST', CM, { metadata: { name: 'w-existing', labels: { w: 'one' } } });
  const stream = await watch(cluster, `${CM}?watch=1&labelSelector=w%3Done`);
  const first = await stream.next();
  assert.equal(first.type, 'ADDED');
  assert.equal(first.object.metadata?.name, 'w-existing');
  assert.equal(first.object.kind, 'ConfigMap');
  await call(
    cluster,
    'PATCH',
    `${CM}/w-existing`,
    { data: { x: '1' } },
    { contentType: 'application/merge-patch+json' },
  );
  const modified = await stream.next();
  assert.equal(modified.type, 'MODIFIED');
  assert.equal(modified.object.data?.x, '1');
  await call(
    cluster,
    'PATCH',
    `${CM}/w-existing`,
    { metadata: { labels: { w: 'two' } } },
    { contentType: 'application/merge-patch+json' },
  );
  const left = await stream.next();
  assert.equal(left.type, 'DELETED', 'an object that stops matching the selector is DELETED for this watch');
  await call(cluster, 'POST', CM, { metadata: { name: 'w-new', labels: { w: 'one' } } });
  assert.equal((await stream.next()).object.metadata?.name, 'w-new');
  await call(cluster, 'DELETE', `${CM}/w-new`);
  const deleted = await stream.next();
  assert.equal(deleted.type, 'DELETED');
  assert.equal(deleted.object.metadata?.name, 'w-new');
  stream.close();
});

test('a watch resumes from a resourceVersion, sends bookmarks, and answers 410 Gone when too old', async () => {
  const created = await call(cluster, 'POST', CM, { metadata: { name: 'w-resume' } });
  const rv = String(created.body.metadata?.resourceVersion);
  await call(
    cluster,
    'PATCH',
    `${CM}/w-resume`,
    { data: { n: '1' } },
    { contentType: 'application/merge-patch+json' },
  );
  await call(
    cluster,
    'PATCH',
    `${CM}/w-resume`,
    { data: { n: '2' } },
    { contentType: 'application/merge-patch+json' },
  );
  const resumed = await watch(
    cluster,
    `${CM}?watch=true&resourceVersion=${rv}&allowWatchBookmarks=true&fieldSelector=metadata.name%3Dw-resume`,
  );
  const e1 = await resumed.next();
  const e2 = await resumed.next();
  assert.deepEqual(
    [e1.type, e1.object.data?.n, e2.type, e2.object.data?.n],
    ['MODIFIED', '1', 'MODIFIED', '2'],
  );
  const bookmark = await resumed.next();
  assert.equal(bookmark.type, 'BOOKMARK');
  assert.ok(Number(bookmark.object.metadata?.resourceVersion) >= Number(e2.object.metadata?.resourceVersion));
  resumed.close();
  for (let i = 0; i < 25; i++) {
    await call(
      cluster,
      'PATCH',
      `${CM}/w-resume`,
      { data: { n: String(i) } },
      { contentType: 'application/merge-patch+json' },
    );
  }
  const old = await watch(cluster, `${CM}?watch=1&resourceVersion=${rv}`);
  const error = await old.next();
  assert.equal(error.type, 'ERROR');
  assert.equal(error.object.kind, 'Status');
  assert.equal(error.object.code, 410);
  assert.equal(error.object.reason, 'Expired');
  old.close();
});

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CoreV1Api, KubeConfig, makeInformer, type V1ConfigMap } from '@kubernetes/client-node';
import { builtinType } from './apiserver/resources.js';
import { eventually } from './client.js';
import { type Cluster, startCluster } from './harness.js';

let cluster: Cluster;
before(async () => {
  cluster = await startCluster({ workloads: false, historySize: 10 });
});
after(() => cluster.stop());

const CONFIGMAPS = builtinType('configmaps');

test('a client-node informer lists, watches, resumes after a dropped watch, and relists after 410', async () => {
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'inf' } } });
  await core.createNamespacedConfigMap({
    namespace: 'inf',
    body: { metadata: { name: 'before' }, data: { v: '0' } },
  });
  let lists = 0;
  const informer = makeInformer<V1ConfigMap>(kc, '/api/v1/namespaces/inf/configmaps', () => {
    lists++;
    return core.listNamespacedConfigMap({ namespace: 'inf' });
  });
  const seen = new Map<string, string>();
  const record = (cm: V1ConfigMap) => seen.set(cm.metadata?.name ?? '', cm.data?.v ?? '');
  informer.on('add', record);
  informer.on('update', record);
  informer.on('delete', (cm) => seen.delete(cm.metadata?.name ?? ''));
  informer.on('error', () => {});
  await informer.start();
  try {
    await eventually(async () => (seen.has('before') ? true : undefined), 'the initial list');
    await core.createNamespacedConfigMap({
      namespace: 'inf',
      body: { metadata: { name: 'watched' }, data: { v: '1' } },
    });
    await core.patchNamespacedConfigMap({
      namespace: 'inf',
      name: 'watched',
      body: [{ op: 'replace', path: '/data/v', value: '2' }],
    });
    await eventually(async () => (seen.get('watched') === '2' ? true : undefined), 'watch events');
    assert.equal(lists, 1);

    // A dropped watch resumes from the last resourceVersion without a relist.
    cluster.dropWatches();
    await core.deleteNamespacedConfigMap({ namespace: 'inf', name: 'before' });
    await eventually(async () => (seen.has('before') ? undefined : true), 'the deletion after resuming');
    assert.equal(lists, 1);

    // Too many writes while the watch is down: resuming gets 410 Gone and the informer relists.
    cluster.dropWatches();
    for (let i = 0; i < 15; i++) {
      cluster.lifecycle.create(CONFIGMAPS, {
        metadata: { name: `burst-${i}`, namespace: 'inf' },
        data: { v: String(i) },
      });
    }
    await eventually(
      async () => (seen.get('burst-14') === '14' && seen.get('burst-0') === '0' ? true : undefined),
      'the relist',
    );
    assert.ok(lists >= 2, `expected a relist after 410, got ${lists} list call(s)`);
  } finally {
    await informer.stop();
  }
});

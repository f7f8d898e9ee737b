import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { PORTICO_MAIN } from '../support/portico.js';
import { asList, call, eventually, type Loose } from './client.js';
import { type Cluster, startCluster } from './harness.js';

let cluster: Cluster;
before(async () => {
  cluster = await startCluster({ minTokenExpirationSeconds: 2, resyncMs: 200 });
});
after(() => cluster.stop());

const PODS = '/api/v1/namespaces/default/pods';

function podDir(pod: Loose): string {
  return join(
    cluster.dir,
    'pods',
    `default_${String(pod.metadata?.name)}_${String(pod.metadata?.uid).slice(0, 8)}`,
  );
}

test('a projected service account token is re-issued before it expires; short lifetimes are refused', async () => {
  const tooShort = await call(cluster, 'POST', PODS, {
    metadata: { name: 'short' },
    spec: {
      containers: [{ name: 'c', image: 'echo', volumeMounts: [{ name: 't', mountPath: '/t' }] }],
      volumes: [
        {
          name: 't',
          projected: { sources: [{ serviceAccountToken: { audience: 'a', expirationSeconds: 1 } }] },
        },
      ],
    },
  });
  assert.equal(tooShort.status, 422);
  const created = await call(cluster, 'POST', PODS, {
    metadata: { name: 'refresh' },
    spec: {
      containers: [{ name: 'c', image: 'echo', volumeMounts: [{ name: 't', mountPath: '/t' }] }],
      volumes: [
        {
          name: 't',
          projected: {
            sources: [{ serviceAccountToken: { audience: 'a', expirationSeconds: 2, path: 'token' } }],
          },
        },
      ],
    },
  });
  assert.equal(created.status, 201);
  const file = join(podDir(created.body), 'root', 't', 'token');
  const first = await eventually(
    async () => (existsSync(file) ? readFileSync(file, 'utf8') : undefined),
    'the token file',
  );
  const second = await eventually(
    async () => {
      const now = readFileSync(file, 'utf8');
      return now !== first ? now : undefined;
    },
    'a refreshed token',
    5000,
  );
  const review = await call(cluster, 'POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
    spec: { token: second, audiences: ['a'] },
  });
  assert.equal(review.body.status?.authenticated, true as unknown);
});

test('the Portico image runs the built CLI inside the pod', {
  skip: existsSync(PORTICO_MAIN) ? false : 'run npm run build first',
}, async () => {
  await call(cluster, 'POST', PODS, {
    metadata: { name: 'cli' },
    spec: {
      containers: [{ name: 'portico', image: 'ghcr.io/portico/portico:dev', args: ['no-such-command'] }],
    },
  });
  const status = await eventually(async () => {
    const p = (await call(cluster, 'GET', `${PODS}/cli`)).body;
    const s = asList(p.status?.containerStatuses)[0];
    return s?.lastState?.terminated === undefined ? undefined : s;
  }, 'the CLI to exit');
  assert.equal(status.lastState?.terminated?.exitCode, 2 as unknown, 'portico exits 2 on an unknown command');
});

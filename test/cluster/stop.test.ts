// cluster.stop() leaves nothing behind (no child, server, socket or timer), so a test process exits by itself.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { call, eventually } from './client.js';
import { startCluster } from './harness.js';

const KINDS = ['ProcessWrap', 'TCPServerWrap', 'TCPSocketWrap', 'PipeWrap', 'FSEventWrap', 'Timeout'];

function counts(): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of process.getActiveResourcesInfo()) {
    if (KINDS.includes(r)) out.set(r, (out.get(r) ?? 0) + 1);
  }
  return out;
}

function get(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path: '/', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

test('stop() reaps every pod process and closes every server, socket, watcher and timer', async () => {
  const baseline = counts();
  const cluster = await startCluster({ crds: true });
  await call(cluster, 'POST', '/api/v1/namespaces', { metadata: { name: 'stop' } });
  const labels = { app: 'echo' };
  const deployment = await call(cluster, 'POST', '/apis/apps/v1/namespaces/stop/deployments', {
    metadata: { name: 'echo' },
    spec: {
      replicas: 2,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: 'echo',
              image: 'echo:stop',
              env: [{ name: 'HTTP_PORT', value: '3000' }],
              readinessProbe: { tcpSocket: { port: 3000 } },
            },
          ],
        },
      },
    },
  });
  assert.equal(deployment.status, 201);
  const service = await call(cluster, 'POST', '/api/v1/namespaces/stop/services', {
    metadata: { name: 'echo' },
    spec: { type: 'LoadBalancer', selector: labels, ports: [{ port: 8080, targetPort: 3000 }] },
  });
  const ip = String(service.body.spec?.clusterIP);
  // Traffic through the Service proxy, and a watch held open, so stop() has live connections to close.
  await eventually(async () => ((await get(ip, 8080).catch(() => 0)) === 200 ? true : undefined), 'echo');
  const watch = call(cluster, 'GET', '/api/v1/namespaces/stop/pods?watch=1').catch(() => undefined);
  assert.ok(counts().get('ProcessWrap')! >= 2, 'pod processes were running');

  await cluster.stop();
  await watch;
  // Closed handles leave the list once their close callbacks have run, a few loop turns later.
  const left = await eventually(
    async () => {
      await new Promise((resolve) => setImmediate(resolve));
      const now = counts();
      return KINDS.every((k) => (now.get(k) ?? 0) <= (baseline.get(k) ?? 0)) ? now : undefined;
    },
    `no handles left beyond ${JSON.stringify([...baseline])}`,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; left: ${JSON.stringify([...counts()])}`);
  });
  assert.equal(left.get('ProcessWrap') ?? 0, baseline.get('ProcessWrap') ?? 0);
});

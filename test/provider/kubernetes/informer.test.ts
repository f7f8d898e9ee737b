import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../../src/platform/log-line.js';
import type { ApiClient, JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { createInformer } from '../../../src/provider/kubernetes/informer.js';
import { createFakeKubernetesApi } from '../../support/fake-kubernetes-api.js';

const PATH = '/apis/gateway.networking.k8s.io/v1/grpcroutes';

/** A collection that is not served (404, its CRD not installed) until `serve` is called; watches stay open. */
function collection() {
  let served = false;
  const api = createFakeKubernetesApi((request) =>
    served || request.bare !== PATH
      ? undefined
      : {
          status: 404,
          body: { kind: 'Status', message: 'the server could not find the requested resource' },
        },
  );
  return {
    client: api.client,
    serve(list: JsonObject[]) {
      for (const item of list) {
        const { name, namespace } = item.metadata as { name: string; namespace: string };
        api.objects.set(
          `/apis/gateway.networking.k8s.io/v1/namespaces/${namespace}/grpcroutes/${name}`,
          item,
        );
      }
      served = true;
    },
  };
}

function informer(client: ApiClient, mayBeAbsent: boolean, log: string[], onChange: () => void = () => {}) {
  return createInformer<JsonObject>({
    client,
    path: PATH,
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GRPCRoute',
    convert: (raw) => raw,
    fingerprint: (raw) => JSON.stringify(raw),
    onChange,
    log: createLogger('debug', (line) => log.push(line)),
    retryMs: 5,
    mayBeAbsent,
    absentRetryMs: 10,
  });
}

async function until(what: string, done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(done(), what);
}

test('a collection that may be absent starts empty while not served, and fills once its CRD is installed', async () => {
  const c = collection();
  const log: string[] = [];
  let changes = 0;
  const i = informer(c.client, true, log, () => {
    changes++;
  });
  const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 2000).unref());
  const started = await Promise.race([i.start().then(() => 'started' as const), timeout]);
  try {
    assert.equal(started, 'started', 'start must not wait for a collection that may be absent');
    assert.equal(i.items().size, 0);
    assert.match(log[0] ?? '', /grpcroutes is not served \(is its CRD installed\?\)/);
    c.serve([{ metadata: { name: 'echo', namespace: 'apps', resourceVersion: '4' } }]);
    await until('the route is listed once served', () => i.items().size === 1);
    assert.ok(i.items().has('apps/echo'));
    assert.equal(changes, 1);
    assert.ok(log.some((line) => /grpcroutes is served now/.test(line)));
  } finally {
    i.stop();
  }
});

test('a required collection that is not served keeps start waiting, as before', async () => {
  const c = collection();
  const log: string[] = [];
  const i = informer(c.client, false, log);
  let started = false;
  const starting = i.start().then(() => {
    started = true;
  });
  await until('the list is retried', () => log.length >= 2);
  assert.equal(started, false);
  c.serve([]);
  await starting;
  i.stop();
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApiClient, JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { createStatusWriter } from '../../../src/provider/kubernetes/status-writer.js';

const OURS = 'gateway.portico.io/gatewayclass-controller';

/** An API server that holds one object and records every request. */
function fakeClient(object: JsonObject): {
  client: ApiClient;
  requests: { method: string; path: string; body?: unknown }[];
} {
  const requests: { method: string; path: string; body?: unknown }[] = [];
  const client: ApiClient = {
    async request(method, path, body) {
      requests.push({ method, path, body });
      return { status: 200, body: method === 'GET' ? object : (body as JsonObject) };
    },
    watch() {
      throw new Error('not watched here');
    },
  };
  return { client, requests };
}

const accepted = {
  type: 'Accepted',
  status: 'True',
  reason: 'Accepted',
  message: 'Accepted',
  observedGeneration: 1,
};

for (const [kind, resource] of [
  ['HTTPRoute', 'httproutes'],
  ['GRPCRoute', 'grpcroutes'],
] as const) {
  test(`${kind} status goes to ${resource}/status with other controllers' parents kept`, async () => {
    const other = { parentRef: { name: 'theirs' }, controllerName: 'example.com/other', conditions: [] };
    const { client, requests } = fakeClient({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind,
      metadata: { name: 'r', namespace: 'apps', generation: 1, resourceVersion: '7' },
      status: { parents: [other] },
    });
    const writer = createStatusWriter({ client, controllerName: OURS, onWrite: () => {} });
    const ours = { parentRef: { name: 'eg' }, controllerName: OURS, conditions: [accepted] };
    await writer.write(
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind,
        namespace: 'apps',
        name: 'r',
        generation: 1,
        status: { parents: [ours] },
      },
      undefined,
    );
    const put = requests.find((r) => r.method === 'PUT');
    assert.equal(put?.path, `/apis/gateway.networking.k8s.io/v1/namespaces/apps/${resource}/r/status`);
    const body = put?.body as { status: { parents: { controllerName: string }[] } } | undefined;
    assert.deepEqual(
      body?.status.parents.map((p) => p.controllerName),
      ['example.com/other', OURS],
    );
  });
}

test('a status over the API limits is cut, not refused: condition messages, reasons and lists', async () => {
  const { client, requests } = fakeClient({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'eg', namespace: 'apps', generation: 1, resourceVersion: '7' },
  });
  const writer = createStatusWriter({ client, controllerName: OURS, onWrite: () => {} });
  const long = (n: number) => `${'😀'.repeat(n / 2)}`;
  const programmed = { ...accepted, type: 'Programmed', status: 'False', reason: 'R'.repeat(2000) };
  await writer.write(
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      namespace: 'apps',
      name: 'eg',
      generation: 1,
      status: {
        conditions: [{ ...accepted, message: long(100_000) }, programmed],
        listeners: [
          {
            name: 'http',
            supportedKinds: [],
            attachedRoutes: 0,
            conditions: Array.from({ length: 12 }, (_, i) => ({
              ...accepted,
              type: `T${i}`,
              message: 'x'.repeat(40_000),
            })),
          },
        ],
      },
    },
    undefined,
  );
  const put = requests.find((r) => r.method === 'PUT');
  type Cond = { message: string; reason: string };
  const status = (put!.body as { status: { conditions: Cond[]; listeners: { conditions: Cond[] }[] } })
    .status;
  const message = status.conditions[0]!.message;
  assert.ok(message.length <= 32_768, String(message.length));
  assert.match(message, /😀 …\[cut: 100000 characters\]$/);
  assert.equal(status.conditions[1]!.reason.length, 1024);
  assert.equal(status.listeners[0]!.conditions.length, 8);
  for (const c of status.listeners[0]!.conditions) assert.ok(c.message.length <= 32_768);
});

test('route parents beyond 32 are cut from ours, never from other controllers', async () => {
  const parent = (controllerName: string, i: number) => ({
    parentRef: { name: `gw-${i}` },
    controllerName,
    conditions: [accepted],
  });
  const others = Array.from({ length: 20 }, (_, i) => parent('example.com/other', i));
  const { client, requests } = fakeClient({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'r', namespace: 'apps', generation: 1, resourceVersion: '7' },
    status: { parents: others },
  });
  const writer = createStatusWriter({ client, controllerName: OURS, onWrite: () => {} });
  await writer.write(
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      namespace: 'apps',
      name: 'r',
      generation: 1,
      status: { parents: Array.from({ length: 20 }, (_, i) => parent(OURS, i)) },
    },
    undefined,
  );
  const put = requests.find((r) => r.method === 'PUT');
  const parents = (put!.body as { status: { parents: { controllerName: string }[] } }).status.parents;
  assert.equal(parents.length, 32);
  assert.equal(parents.filter((p) => p.controllerName === 'example.com/other').length, 20);
});

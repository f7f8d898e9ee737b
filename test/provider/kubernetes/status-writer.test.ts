import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { createStatusWriter } from '../../../src/provider/kubernetes/status-writer.js';
import { createFakeKubernetesApi } from '../../support/fake-kubernetes-api.js';

const OURS = 'gateway.portico.io/gatewayclass-controller';

/** An API server that holds one object and records every request. */
function fakeClient(object: JsonObject) {
  const api = createFakeKubernetesApi();
  api.add(object);
  return { client: api.client, requests: api.requests };
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
    const patch = requests.find((r) => r.method === 'PATCH');
    assert.equal(patch?.path, `/apis/gateway.networking.k8s.io/v1/namespaces/apps/${resource}/r/status`);
    assert.equal(patch?.contentType, 'application/merge-patch+json');
    // parents is an atomic list shared with other controllers: it goes whole, theirs first, against the version
    // it was read at (a conflict means someone wrote first).
    const body = patch?.body as {
      metadata: { resourceVersion: string };
      status: { parents: { controllerName: string }[] };
    };
    assert.deepEqual(Object.keys(body.status), ['parents']);
    assert.equal(body.metadata.resourceVersion, '7');
    assert.deepEqual(
      body.status.parents.map((p) => p.controllerName),
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
  const put = requests.find((r) => r.method === 'PATCH');
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
  const put = requests.find((r) => r.method === 'PATCH');
  const parents = (put!.body as { status: { parents: { controllerName: string }[] } }).status.parents;
  assert.equal(parents.length, 32);
  assert.equal(parents.filter((p) => p.controllerName === 'example.com/other').length, 20);
});

test('a Gateway status sends only what differs: a changed list whole, a field gone as null, nothing if equal', async () => {
  const listener = { name: 'http', supportedKinds: [], attachedRoutes: 3, conditions: [accepted] };
  const shown = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'eg', namespace: 'apps', generation: 1, resourceVersion: '7' },
    status: {
      addresses: [{ type: 'IPAddress', value: '10.0.0.1' }],
      conditions: [accepted],
      listeners: [listener],
    },
  };
  const { client, requests } = fakeClient(shown);
  const writer = createStatusWriter({ client, controllerName: OURS, onWrite: () => {} });
  const status = (s: Record<string, unknown>) => ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    namespace: 'apps',
    name: 'eg',
    generation: 1,
    status: s,
  });
  const version = await writer.write(
    status({ conditions: [accepted], listeners: [{ ...listener, attachedRoutes: 4 }] }),
    shown,
  );
  assert.equal(version, '8', 'the version after the write, for the sink to know its own write coming back');
  assert.deepEqual(requests.at(-1)?.body, {
    metadata: { resourceVersion: '7' },
    status: { addresses: null, listeners: [{ ...listener, attachedRoutes: 4 }] },
  });
  const before = requests.length;
  assert.equal(await writer.write(status(shown.status), shown), undefined);
  assert.equal(requests.length, before, 'an equal status is not written');
});

test('every request of a write waits its turn under the write rate', async () => {
  const { client, requests } = fakeClient({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name: 'c', generation: 1, resourceVersion: '7' },
  });
  const turns: number[] = [];
  const rate = {
    limit: { perSecond: 1, burst: 1 },
    take: async () => {
      turns.push(requests.length);
    },
    waitedSeconds: () => 0,
    waiting: () => 0,
  };
  const writer = createStatusWriter({ client, controllerName: OURS, onWrite: () => {}, rate });
  const status = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    name: 'c',
    generation: 1,
    status: { conditions: [accepted] },
  };
  await writer.write(status, undefined);
  assert.deepEqual(
    requests.map((r) => r.method),
    ['GET', 'PATCH'],
  );
  assert.deepEqual(turns, [0, 1], 'a turn before the read and one before the write');
});

test("another controller's Gateway and listener conditions are kept as they are; ours are replaced", async () => {
  const foreign = {
    type: 'example.com/Audited',
    status: 'True',
    reason: 'Seeded',
    message: '',
    observedGeneration: 1,
    lastTransitionTime: '2026-01-01T00:00:00Z',
  };
  const stale = { ...accepted, observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' };
  const { client, requests } = fakeClient({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'eg', namespace: 'apps', generation: 2, resourceVersion: '7' },
    status: {
      conditions: [stale, foreign],
      listeners: [
        { name: 'http', supportedKinds: [], attachedRoutes: 0, conditions: [stale, foreign] },
        { name: 'gone', supportedKinds: [], attachedRoutes: 0, conditions: [foreign] },
      ],
    },
  });
  const writer = createStatusWriter({ client, controllerName: OURS, onWrite: () => {} });
  const now = { ...accepted, observedGeneration: 2, lastTransitionTime: '2026-02-01T00:00:00Z' };
  await writer.write(
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      namespace: 'apps',
      name: 'eg',
      generation: 2,
      status: {
        conditions: [now],
        listeners: [{ name: 'http', supportedKinds: [], attachedRoutes: 0, conditions: [now] }],
      },
    },
    undefined,
  );
  const patch = requests.find((r) => r.method === 'PATCH');
  const status = (
    patch!.body as { status: { conditions: unknown[]; listeners: { conditions: unknown[] }[] } }
  ).status;
  assert.deepEqual(status.conditions, [now, foreign]);
  // A listener no longer in the spec goes, with whatever it held; a listener that stays keeps theirs.
  assert.equal(status.listeners.length, 1);
  assert.deepEqual(status.listeners[0]!.conditions, [now, foreign]);
});

test('a status that differs from what is shown only by foreign conditions is not written', async () => {
  const foreign = {
    type: 'example.com/Audited',
    status: 'True',
    reason: 'Seeded',
    message: '',
    observedGeneration: 1,
  };
  const { client, requests } = fakeClient({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name: 'eg', generation: 1, resourceVersion: '7' },
    status: { conditions: [accepted, foreign] },
  });
  const writer = createStatusWriter({ client, controllerName: OURS, onWrite: () => {} });
  await writer.write(
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GatewayClass',
      name: 'eg',
      generation: 1,
      status: { conditions: [accepted] },
    },
    undefined,
  );
  assert.equal(requests.filter((r) => r.method === 'PATCH').length, 0);
});

test('a Gateway condition type Portico writes is its own: not kept as foreign, so never doubled, gone once unsaid', async () => {
  const insecure = {
    type: 'InsecureFrontendValidationMode',
    status: 'True',
    reason: 'ConfigurationChanged',
    message: 'AllowInsecureFallback',
    observedGeneration: 1,
    lastTransitionTime: '2026-01-01T00:00:00Z',
  };
  const { client, requests } = fakeClient({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'eg', namespace: 'apps', generation: 2, resourceVersion: '7' },
    status: { conditions: [{ ...accepted, lastTransitionTime: '2026-01-01T00:00:00Z' }, insecure] },
  });
  const writer = createStatusWriter({ client, controllerName: OURS, onWrite: () => {} });
  const now = { ...accepted, observedGeneration: 2, lastTransitionTime: '2026-02-01T00:00:00Z' };
  const gateway = (conditions: unknown[]) => ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    namespace: 'apps',
    name: 'eg',
    generation: 2,
    status: { conditions },
  });
  await writer.write(gateway([now]), undefined);
  const patch = requests.find((r) => r.method === 'PATCH');
  assert.deepEqual((patch!.body as { status: { conditions: unknown[] } }).status.conditions, [now]);
});

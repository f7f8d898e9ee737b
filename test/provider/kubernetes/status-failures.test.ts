// One status write failing is that object's own problem: the API server refusing it (422, 403, 500) or never
// answering leaves every other object's status written, the failing one is retried on its own backoff (not on
// every pass), and a new status for it is tried at once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApiClient, JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { apiStatusSink } from '../../../src/provider/kubernetes/status-sink.js';
import { createStatusWriter } from '../../../src/provider/kubernetes/status-writer.js';
import { createStatusStamper } from '../../../src/runner/status-stamps.js';
import type { ObjectStatus } from '../../../src/translate/index.js';
import { createFakeKubernetesApi, type FakeAnswer } from '../../support/fake-kubernetes-api.js';
import { manualTimers } from '../../support/manual-timers.js';

const OURS = 'gateway.portico.io/gatewayclass-controller';
const NAMESPACES = ['a', 'b', 'c', 'd', 'e'];

function gatewayStatus(namespace: string, message = 'Accepted'): ObjectStatus {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    namespace,
    name: 'gw',
    generation: 1,
    status: {
      conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message, observedGeneration: 1 }],
    },
  };
}

const gatewayObject = (namespace: string): JsonObject => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name: 'gw', namespace, generation: 1, resourceVersion: '1' },
});

interface FakeApiServer {
  written: string[];
  attempts: Map<string, number>;
  /** A status write's answer instead of success ('hang': none ever), while it returns one. */
  refuse: (namespace: string) => FakeAnswer;
  client: ApiClient;
}

/** The API server: every Gateway exists; `refuse` answers a status write instead. */
function fakeApiServer(): FakeApiServer {
  const api = createFakeKubernetesApi();
  for (const namespace of NAMESPACES) api.add(gatewayObject(namespace));
  const server: FakeApiServer = {
    written: [],
    attempts: new Map(),
    refuse: () => undefined,
    client: api.client,
  };
  api.answer = (request) => {
    if (request.method === 'GET') return undefined;
    const namespace = request.bare.split('/')[5]!;
    server.attempts.set(namespace, (server.attempts.get(namespace) ?? 0) + 1);
    const refused = server.refuse(namespace);
    if (refused === undefined) server.written.push(namespace);
    return refused;
  };
  return server;
}

function sinkFor(server: FakeApiServer, timers: ReturnType<typeof manualTimers>) {
  const writer = createStatusWriter({ client: server.client, controllerName: OURS, onWrite: () => {} });
  return apiStatusSink({ raw: () => undefined }, writer, () => true, {
    backoff: { firstMs: 2000, maxMs: 300_000 },
    now: timers.now,
    setTimer: timers.setTimer,
  });
}

const stamper = createStatusStamper();
const stamped = (statuses: ObjectStatus[]) => stamper.stamp(statuses, () => undefined, new Date(0));

for (const [name, refusal] of [
  [
    '422 Invalid',
    { status: 422, body: { kind: 'Status', reason: 'Invalid', message: 'status.conditions: Too many' } },
  ],
  [
    '403 Forbidden',
    { status: 403, body: { kind: 'Status', reason: 'Forbidden', message: 'denied by policy' } },
  ],
  ['500 InternalError', { status: 500, body: { kind: 'Status', reason: 'InternalError', message: 'etcd' } }],
] as const) {
  test(`a status write refused with ${name} leaves the others written and waits its own backoff`, async () => {
    const server = fakeApiServer();
    const timers = manualTimers();
    server.refuse = (namespace) => (namespace === 'a' ? refusal : undefined);
    const sink = sinkFor(server, timers);
    const statuses = stamped(NAMESPACES.map((n) => gatewayStatus(n)));
    await sink.show(statuses);
    await sink.idle();
    assert.deepEqual(server.written.sort(), ['b', 'c', 'd', 'e']);
    // Passes while it waits do not write it again.
    for (let i = 0; i < 5; i++) await sink.show(statuses);
    await sink.idle();
    assert.equal(server.attempts.get('a'), 1);
    assert.deepEqual(timers.waits(), [2000]);
    timers.next();
    await sink.idle();
    assert.equal(server.attempts.get('a'), 2);
    assert.deepEqual(timers.waits(), [4000]);
    server.refuse = () => undefined;
    timers.next();
    await sink.idle();
    assert.ok(server.written.includes('a'));
    assert.deepEqual(timers.waits(), []);
    sink.stop();
  });
}

test('a new status for a failing object is tried at once', async () => {
  const server = fakeApiServer();
  const timers = manualTimers();
  server.refuse = (namespace) =>
    namespace === 'a'
      ? { status: 422, body: { kind: 'Status', reason: 'Invalid', message: 'no' } }
      : undefined;
  const sink = sinkFor(server, timers);
  await sink.show(stamped([gatewayStatus('a')]));
  await sink.idle();
  server.refuse = () => undefined;
  await sink.show(stamped([gatewayStatus('a', 'Accepted again')]));
  await sink.idle();
  assert.deepEqual(server.written, ['a']);
  assert.deepEqual(timers.waits(), []);
  sink.stop();
});

test('a status write the API server never answers holds no other write, nor the pass', async () => {
  const server = fakeApiServer();
  const timers = manualTimers();
  server.refuse = (namespace) => (namespace === 'a' ? 'hang' : undefined);
  const sink = sinkFor(server, timers);
  // show() returns while the hung write is still waiting: the runner's pass (and discovery) goes on.
  await sink.show(stamped(NAMESPACES.map((n) => gatewayStatus(n))));
  for (let i = 0; i < 50 && server.written.length < 4; i++) await new Promise((r) => setImmediate(r));
  assert.deepEqual(server.written.sort(), ['b', 'c', 'd', 'e']);
  sink.stop();
});

// The status sink submits only what changed: a pass over thousands of objects whose translation and shown object
// are unchanged writes (and canonicalises) nothing, so it never keeps the event loop from the next publication;
// and with the runner, writes that never finish hold back no edit's publication.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseYamlFile } from '../../../src/api/load.js';
import { buildSnapshot } from '../../../src/api/snapshot.js';
import type { JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { apiStatusSink } from '../../../src/provider/kubernetes/status-sink.js';
import type { StatusWriter } from '../../../src/provider/kubernetes/status-writer.js';
import { createRunner } from '../../../src/runner/runner.js';
import { createStatusStamper } from '../../../src/runner/status-stamps.js';
import type { ObjectStatus } from '../../../src/translate/index.js';
import { withTestCertificates } from '../../translate/testdata-certificates.js';

const NAMESPACES = ['a', 'b', 'c', 'd', 'e'];

const translated = new Map(
  NAMESPACES.map((namespace): [string, ObjectStatus] => [
    namespace,
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      namespace,
      name: 'gw',
      generation: 1,
      status: {
        conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', observedGeneration: 1 }],
      },
    },
  ]),
);

/** The informer's view (replaced, as a watch event replaces it) and a writer that records each call. */
function world(leading = () => true) {
  const shown = new Map<string, JsonObject>();
  const show = (namespace: string, version: string) =>
    shown.set(`${namespace}/gw`, {
      metadata: { name: 'gw', namespace, generation: 1, resourceVersion: version },
    });
  for (const n of NAMESPACES) show(n, '1');
  const writes: string[] = [];
  // The version the writer's write gives the object (the API server's answer), by namespace.
  const versions = new Map<string, string>();
  const writer: StatusWriter = {
    async write(status) {
      writes.push(status.namespace!);
      return versions.get(status.namespace!);
    },
  };
  const sink = apiStatusSink({ raw: (_kind, key) => shown.get(key) }, writer, leading);
  const stamper = createStatusStamper();
  const pass = async () => {
    await sink.show(stamper.stamp([...translated.values()], sink.shown, new Date(0)));
    await sink.idle();
  };
  return { show, writes, sink, pass, stamper, versions };
}

test('a pass whose statuses and shown objects are unchanged writes nothing again', async () => {
  const { writes, sink, pass } = world();
  await pass();
  assert.deepEqual(writes.sort(), NAMESPACES);
  for (let i = 0; i < 3; i++) await pass();
  assert.equal(writes.length, NAMESPACES.length);
  sink.stop();
});

test('an object shown anew (its own write coming back, or another writer) is checked again, alone', async () => {
  const { show, writes, sink, pass } = world();
  await pass();
  writes.length = 0;
  show('c', '2');
  await pass();
  assert.deepEqual(writes, ['c']);
  sink.stop();
});

test('a changed translation of one object is written, and only it', async () => {
  const { writes, sink, pass } = world();
  await pass();
  writes.length = 0;
  const before = translated.get('b')!;
  translated.set('b', { ...before, status: { conditions: [] } });
  try {
    await pass();
  } finally {
    translated.set('b', before);
  }
  assert.deepEqual(writes, ['b']);
  sink.stop();
});

test('after reset (a new leader) every status is checked afresh', async () => {
  const { writes, sink, pass } = world();
  await pass();
  sink.reset();
  await pass();
  assert.deepEqual(writes.sort(), [...NAMESPACES, ...NAMESPACES].sort());
  sink.stop();
});

test('statuses not written while not leading are submitted again once leading', async () => {
  let leads = false;
  const { writes, sink, pass } = world(() => leads);
  await pass();
  assert.deepEqual(writes, []);
  leads = true;
  await pass();
  assert.deepEqual(writes.sort(), NAMESPACES);
  sink.stop();
});

test('every status write hanging holds no publication: each edit is published by its own pass', async () => {
  const url = new URL('../../translate/testdata/merged.in.yaml', import.meta.url);
  const text = withTestCertificates(readFileSync(url, 'utf8'));
  let snapshot = buildSnapshot(parseYamlFile('merged.in.yaml', text).objects.map((o) => o.object));
  const published: string[] = [];
  let hanging = 0;
  const writer: StatusWriter = {
    write: () => {
      hanging++;
      return new Promise<undefined>(() => {});
    },
  };
  const sink = apiStatusSink({ raw: () => undefined }, writer, () => true);
  const runner = createRunner({
    translate: {
      controllerName: 'gateway.portico.io/gatewayclass-controller',
      controllerNamespace: 'portico-gateway-system',
      deployType: 'ControllerNamespace',
    },
    source: { snapshot: () => snapshot, dataPlane: () => ({ fleets: {} }) },
    discovery: { setFleet: (c) => void published.push(c.fleet), removeFleet() {}, nodes: () => [] },
    infra: { apply: async () => ({}) },
    statuses: sink,
    onError: (error) => assert.fail(error as Error),
  });
  await runner.now();
  assert.ok(published.length > 0);
  assert.ok(hanging > 0, 'the writes started and never finished');
  for (const version of ['1', '2']) {
    const before = published.length;
    const edited = parseYamlFile(
      'solo.yaml',
      `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: solo, namespace: default}
spec:
  parentRefs: [{name: solo}]
  rules:
    - filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-version, value: "${version}"}]}}]
      backendRefs: [{name: web, port: 80}]
`,
    ).objects[0]!.object;
    assert.equal(edited.kind, 'HTTPRoute');
    snapshot = {
      ...snapshot,
      httpRoutes: snapshot.httpRoutes.map((r) =>
        r.metadata.name === 'solo' && edited.kind === 'HTTPRoute' ? edited : r,
      ),
    };
    await runner.now();
    assert.equal(published.length, before + 1, `version ${version} was published`);
  }
  runner.stop();
  sink.stop();
});

test('shown only what changed, the sink writes those and forgets the removed; it wants all at first and after reset', async () => {
  const { writes, sink, pass, stamper } = world();
  assert.equal(sink.wantsAll(), true, 'nothing shown yet');
  await pass();
  assert.equal(sink.wantsAll(), false);
  writes.length = 0;
  const edited = { ...translated.get('d')!, status: { conditions: [] } };
  const gone = translated.get('e')!;
  await sink.showChanged(stamper.stampChanged([edited], [gone], sink.shown, new Date(0)), [gone]);
  await sink.idle();
  assert.deepEqual(writes, ['d']);
  sink.reset();
  assert.equal(sink.wantsAll(), true, 'a new leader is shown everything');
  sink.stop();
});

test("a status changed on the server alone is checked again; the sink's own write coming back is not", async () => {
  const { show, writes, sink, pass, versions } = world();
  versions.set('a', '2');
  await pass();
  writes.length = 0;
  // Its own write coming back: the version its write gave.
  show('a', '2');
  sink.recheck('Gateway', 'a/gw');
  await sink.idle();
  assert.deepEqual(writes, []);
  // Another writer changed it.
  show('a', '3');
  sink.recheck('Gateway', 'a/gw');
  await sink.idle();
  assert.deepEqual(writes, ['a']);
  sink.stop();
});

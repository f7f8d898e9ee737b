import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { describeObject } from '../../../src/api/kinds.js';
import { openResourceStore } from '../../../src/provider/standalone/resource-store.js';

const gateway = (port: number) => `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: eg
spec:
  gatewayClassName: portico
  listeners:
    - name: http
      protocol: HTTP
      port: ${port}
`;
const route = (name: string) => `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: ${name}
spec:
  parentRefs: [{ name: eg }]
`;

const batch = (files: Record<string, string>, removed: string[] = []) => ({
  changed: new Map(Object.entries(files)),
  removed,
});

test('objects load with default namespace, uid, creation time and generation 1', async () => {
  const store = await openResourceStore({ now: () => new Date('2026-01-01T00:00:00Z') });
  const result = store.apply(batch({ 'a.yaml': gateway(8080) }));
  assert.deepEqual(result.errors, []);
  assert.equal(result.changed, true);
  const [gw] = store.objects();
  assert.equal(gw?.metadata.namespace, 'default');
  assert.equal(gw?.metadata.generation, 1);
  assert.equal(gw?.metadata.creationTimestamp, '2026-01-01T00:00:00Z');
  assert.match(gw?.metadata.uid ?? '', /^[0-9a-f]{32}$/);
});

test('objects that arrive in one batch share a creation time; a later batch is newer', async () => {
  let tick = 0;
  // A clock that advances a second on every reading: a batch must read it once.
  const store = await openResourceStore({ now: () => new Date(Date.UTC(2026, 0, 1, 0, 0, tick++)) });
  store.apply(batch({ 'a.yaml': gateway(8080), 'b.yaml': route('r1'), 'c.yaml': route('r2') }));
  const times = new Set(store.objects().map((o) => o.metadata.creationTimestamp));
  assert.deepEqual([...times], ['2026-01-01T00:00:00Z']);
  store.apply(batch({ 'd.yaml': route('r3') }));
  const r3 = store.objects().find((o) => o.metadata.name === 'r3');
  assert.equal(r3?.metadata.creationTimestamp, '2026-01-01T00:00:01Z');
});

test('a spec change bumps generation; an unchanged file keeps object identity', async () => {
  const store = await openResourceStore({});
  store.apply(batch({ 'a.yaml': gateway(8080), 'b.yaml': route('r') }));
  const [before] = store.objects().filter((o) => o.kind === 'HTTPRoute');
  const result = store.apply(batch({ 'a.yaml': gateway(8081), 'b.yaml': route('r') }));
  assert.equal(result.changed, true);
  const gw = store.objects().find((o) => o.kind === 'Gateway');
  assert.equal(gw?.metadata.generation, 2);
  assert.equal(
    store.objects().find((o) => o.kind === 'HTTPRoute'),
    before,
  );
  assert.equal(store.apply(batch({ 'b.yaml': route('r') })).changed, false);
});

test('a file that fails to parse keeps its last good content and reports file and line', async () => {
  const store = await openResourceStore({});
  store.apply(batch({ 'a.yaml': gateway(8080) }));
  const result = store.apply(batch({ 'a.yaml': `${gateway(8080)}  bad: [unclosed\n` }));
  assert.equal(result.changed, false);
  assert.equal(result.errors.length, 1);
  assert.equal(result.errors[0]?.file, 'a.yaml');
  assert.equal(typeof result.errors[0]?.line, 'number');
  assert.equal(store.objects().length, 1);
});

test('an invalid object keeps its last good version; the rest of the file applies', async () => {
  const store = await openResourceStore({});
  store.apply(batch({ 'a.yaml': `${gateway(8080)}---\n${route('r1')}` }));
  const result = store.apply(batch({ 'a.yaml': `${gateway(70000)}---\n${route('r1')}---\n${route('r2')}` }));
  assert.equal(result.errors.length, 1);
  assert.equal(result.errors[0]?.object, 'Gateway default/eg');
  assert.match(result.errors[0]?.field ?? '', /spec\.listeners\[0\]\.port/);
  const ids = store.objects().map(describeObject).sort();
  assert.deepEqual(ids, ['Gateway default/eg', 'HTTPRoute default/r1', 'HTTPRoute default/r2']);
  const gw = store.objects().find((o) => o.kind === 'Gateway');
  assert.equal(gw?.kind === 'Gateway' && gw.spec.listeners[0]?.port, 8080);
});

test('a removed file removes its objects; a duplicate in another file is an error and the first file wins', async () => {
  const store = await openResourceStore({});
  store.apply(batch({ 'a.yaml': route('r'), 'b.yaml': route('r') }));
  assert.equal(store.objects().length, 1);
  const dup = store.apply(batch({ 'b.yaml': route('r') }));
  assert.equal(dup.errors[0]?.file, 'b.yaml');
  assert.match(dup.errors[0]?.message ?? '', /also defined in a\.yaml/);
  store.apply(batch({}, ['a.yaml', 'b.yaml']));
  assert.equal(store.objects().length, 0);
});

test('uid, creation time and generation survive a restart through the state directory', async () => {
  const stateDir = await mkdtemp(join(tmpdir(), 'portico-store-'));
  const first = await openResourceStore({ stateDir, now: () => new Date('2026-01-01T00:00:00Z') });
  first.apply(batch({ 'a.yaml': gateway(8080) }));
  first.apply(batch({ 'a.yaml': gateway(8081) }));
  await first.save();
  assert.match(await readFile(join(stateDir, 'objects.json'), 'utf8'), /Gateway default\/eg/);
  const second = await openResourceStore({ stateDir, now: () => new Date('2026-06-01T00:00:00Z') });
  second.apply(batch({ 'a.yaml': gateway(8081) }));
  const [a] = first.objects();
  const [b] = second.objects();
  assert.equal(b?.metadata.uid, a?.metadata.uid);
  assert.equal(b?.metadata.creationTimestamp, '2026-01-01T00:00:00Z');
  assert.equal(b?.metadata.generation, 2);
});

test('single-file edits (replaced in place) serve the same objects, in the same order, as loading all files', async () => {
  let seed = 7;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const now = () => new Date('2026-01-01T00:00:00Z');
  const store = await openResourceStore({ now });
  const files = new Map<string, string>();
  const content = () => {
    // Mostly a unique route per file; sometimes a name another file may hold too (a duplicate), or nothing.
    const kind = next(10);
    if (kind === 0) return '';
    const names = kind === 1 ? ['shared', `r${next(5)}`] : [`r${next(40)}`];
    return names.map(route).join('---\n');
  };
  for (let step = 0; step < 300; step++) {
    const path = `/r/f${String(next(30)).padStart(2, '0')}.yaml`;
    if (next(8) === 0 && files.has(path)) {
      files.delete(path);
      store.apply(batch({}, [path]));
    } else {
      const text = content();
      files.set(path, text);
      store.apply(batch({ [path]: text }));
    }
    const fresh = await openResourceStore({ now });
    fresh.apply(batch(Object.fromEntries(files)));
    const view = (objects: ReturnType<typeof store.objects>) =>
      objects.map((o) => `${describeObject(o)} ${JSON.stringify((o as { spec?: unknown }).spec)}`);
    assert.deepEqual(view(store.objects()), view(fresh.objects()), `step ${step}`);
  }
});

test('a hostile YAML file is an error naming it; it keeps its last good content and other files still load', async () => {
  const store = await openResourceStore({});
  store.apply(batch({ 'a.yaml': route('r1') }));
  // More than 100 alias references: benign, loads.
  const labels = Array.from({ length: 150 }, (_, i) => `    l${i}: *team`).join('\n');
  const benign = `${route('r2').replace('  name: r2\n', `  name: r2\n  annotations: {team: &team a}\n  labels:\n${labels}\n`)}`;
  const looping = `${route('r1')}  hostnames: &x [*x]\n`;
  const result = store.apply(batch({ 'a.yaml': looping, 'b.yaml': benign }));
  assert.deepEqual(
    result.errors.map((e) => `${e.file}:${e.line}: ${e.message}`),
    ['a.yaml:1: YAML: an alias refers to a collection that contains it'],
  );
  assert.deepEqual(
    store
      .objects()
      .map((o) => o.metadata.name)
      .sort(),
    ['r1', 'r2'],
  );
});

test('errors stay listed while a file is broken, on the objects it still serves, and go once it is fixed', async () => {
  const store = await openResourceStore({});
  store.apply(batch({ 'a.yaml': gateway(8080), 'b.yaml': route('r') }));
  assert.deepEqual(store.errors(), []);
  assert.equal(store.objectErrors().size, 0);

  // A broken YAML file: the file as a whole; its Gateway keeps serving, marked.
  store.apply(batch({ 'a.yaml': `${gateway(8080)}  - name: [broken\n` }));
  const [parse] = store.errors();
  assert.equal(parse?.file, 'a.yaml');
  assert.match(parse?.message ?? '', /^YAML: /);
  const gw = store.objects().find((o) => o.kind === 'Gateway')!;
  assert.equal(gw.spec.listeners[0]?.port, 8080, 'the last good content');
  assert.deepEqual(store.objectErrors().get(gw), [parse]);
  assert.equal(store.objectErrors().size, 1, 'the route in the other file is fine');

  // An invalid object: only that object is marked; a duplicate is listed while both files define it.
  store.apply(batch({ 'a.yaml': gateway(70000), 'c.yaml': route('r') }));
  const errors = store.errors();
  assert.deepEqual(
    errors.map((e) => [e.file, e.object, e.field]),
    [
      ['a.yaml', 'Gateway default/eg', 'spec.listeners[0].port'],
      ['c.yaml', 'HTTPRoute default/r', undefined],
    ],
  );
  assert.equal(store.objectErrors().get(store.objects().find((o) => o.kind === 'Gateway')!)?.length, 1);

  store.apply(batch({ 'a.yaml': gateway(8081) }, ['c.yaml']));
  assert.deepEqual(store.errors(), []);
  assert.equal(store.objectErrors().size, 0);
});

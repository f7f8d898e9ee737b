// Each deployment-mode example in examples/, run by the real `portico standalone` with real proxies and HTTP.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  adminGet,
  adminResources,
  echoBody,
  exampleCopy,
  programmedAddress,
  send,
  startStandalone,
  untilStatus,
} from './harness.js';

test('multiple classes: both classes accepted, each Gateway its own address', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'multiple-classes', ['internal', 'external']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.21.0/24', stateDir });
  const internal = await programmedAddress(c.admin, 'default', 'internal');
  const external = await programmedAddress(c.admin, 'default', 'external');
  assert.notEqual(internal, external);
  assert.match(internal, /^127\.0\.21\.\d+$/);

  const classes = await adminResources(c.admin, '?kind=GatewayClass');
  for (const name of ['portico-internal', 'portico-external']) {
    const status = classes.find((r) => r.metadata.name === name)?.status as {
      conditions?: { type: string; status: string }[];
    };
    assert.equal(status?.conditions?.find((x) => x.type === 'Accepted')?.status, 'True', name);
  }
  assert.equal(echoBody(await untilStatus(internal, 8080, 'internal.example.com', '/', 200)).pod, 'internal');
  assert.equal(echoBody(await untilStatus(external, 8080, 'www.example.com', '/', 200)).pod, 'external');
  const wrong = await send(internal, 8080, 'www.example.com');
  assert.equal(wrong.status, 404);
  assert.equal(wrong.body, '');
});

test('merged Gateways: one address, every listener port reachable; another class keeps its own', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'merged-gateways', ['one', 'two']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.22.0/24', stateDir });
  const merged = await Promise.all(
    ['merged-eg-1', 'merged-eg-2', 'merged-eg-3'].map((n) => programmedAddress(c.admin, 'default', n)),
  );
  assert.equal(new Set(merged).size, 1, `merged Gateways share one address: ${merged.join(', ')}`);
  const shared = merged[0]!;
  const own = await programmedAddress(c.admin, 'default', 'eg');
  assert.notEqual(own, shared);

  assert.equal(echoBody(await untilStatus(shared, 8081, 'www1.example.com', '/', 200)).pod, 'one');
  assert.equal(echoBody(await untilStatus(shared, 8082, 'www2.example.com', '/', 200)).pod, 'two');
  assert.equal(echoBody(await untilStatus(shared, 8083, 'www3.example.com', '/', 200)).pod, 'one');
  assert.equal(echoBody(await untilStatus(own, 8080, 'www.example.com', '/', 200)).pod, 'one');
  // A route is reached on its own Gateway's listener port only.
  assert.equal((await send(shared, 8081, 'www2.example.com')).status, 404);

  const fleets = await adminGet<{ items: { fleet: string; address: string }[] }>(c.admin, '/api/fleets');
  assert.deepEqual(
    fleets.items.map((f) => f.fleet),
    ['default/eg', 'merged-eg'],
  );
});

test('separate controllers: each serves only its own class; a tenant host is 404 through the other proxy', async (t) => {
  const { dir, files } = await exampleCopy(t, 'separate-controllers', ['a', 'b']);
  // Each controller also reads the other tenant's files, so ignoring them is what is tested.
  const a = await startStandalone(t, {
    args: ['--config', join(files, 'tenant-a/config.yaml'), '-f', join(files, 'tenant-b')],
    pool: '127.0.23.0/24',
    stateDir: join(dir, 'state-a'),
  });
  const b = await startStandalone(t, {
    args: ['--config', join(files, 'tenant-b/config.yaml'), '-f', join(files, 'tenant-a')],
    pool: '127.0.24.0/24',
    stateDir: join(dir, 'state-b'),
  });
  const addressA = await programmedAddress(a.admin, 'tenant-a', 'eg');
  const addressB = await programmedAddress(b.admin, 'tenant-b', 'eg');
  assert.equal(echoBody(await untilStatus(addressA, 8080, 'www.tenant-a.example.com', '/', 200)).pod, 'a');
  assert.equal(echoBody(await untilStatus(addressB, 8080, 'www.tenant-b.example.com', '/', 200)).pod, 'b');
  const crossed = await send(addressB, 8080, 'www.tenant-a.example.com');
  assert.equal(crossed.status, 404);
  assert.equal(crossed.body, '');
  assert.equal((await send(addressA, 8080, 'www.tenant-b.example.com')).status, 404);

  // Controller a writes no status on tenant b's objects and runs no fleet for them.
  const seenByA = await adminResources(a.admin, '?namespace=tenant-b');
  assert.ok(seenByA.length > 0, 'tenant b objects are loaded by controller a');
  for (const r of seenByA) assert.equal(r.status, undefined, `${r.kind} ${r.metadata.name}`);
  const classB = (await adminResources(a.admin, '?kind=GatewayClass&name=tenant-b'))[0];
  assert.equal(classB?.status, undefined);
  const fleetsA = await adminGet<{ items: { fleet: string }[] }>(a.admin, '/api/fleets');
  assert.deepEqual(
    fleetsA.items.map((f) => f.fleet),
    ['tenant-a/eg'],
  );
});

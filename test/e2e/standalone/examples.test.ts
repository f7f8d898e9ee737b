// Each deployment-mode example in examples/, run by the real `portico standalone` with real proxies and HTTP.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { rename } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  adminGet,
  adminResources,
  condition,
  echoBody,
  eventually,
  exampleCopy,
  type GatewayStatusView,
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

/** A keep-alive connection to `address:port` that sends one GET at a time and reads its status and body. */
async function heldConnection(address: string, port: number) {
  const socket = connect({ host: address, port });
  await once(socket, 'connect');
  let buffered = '';
  let closed = false;
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
  });
  socket.on('close', () => {
    closed = true;
  });
  return {
    get closed() {
      return closed;
    },
    async get(host: string): Promise<{ status: number; body: string }> {
      buffered = '';
      socket.write(`GET / HTTP/1.1\r\nhost: ${host}\r\n\r\n`);
      return eventually(`a reply on the held connection to ${address}:${port}`, async () => {
        if (closed) throw new Error('the held connection was closed');
        const end = buffered.indexOf('\r\n\r\n');
        if (end === -1) return undefined;
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return undefined;
        return {
          status: Number(buffered.slice(9, 12)),
          body: buffered.slice(end + 4, end + 4 + length),
        };
      });
    },
    close: () => socket.destroy(),
  };
}

test('ListenerSets: a team file added live opens its port on the shared address; a held connection stays', async (t) => {
  const { dir, files, stateDir } = await exampleCopy(t, 'listener-sets', ['platform', 'team-a']);
  // Team A's file comes later, while the fleet serves.
  const teamFile = join(files, 'team-a.yaml');
  const parked = join(dir, 'team-a.yaml.parked');
  await rename(teamFile, parked);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.25.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'infra', 'shared');
  assert.equal(echoBody(await untilStatus(address, 8080, 'www.example.com', '/', 200)).pod, 'platform');
  const held = await heldConnection(address, 8080);
  t.after(() => held.close());
  assert.equal((await held.get('www.example.com')).status, 200);

  await rename(parked, teamFile);
  assert.equal(echoBody(await untilStatus(address, 8090, 'a.example.com', '/', 200)).pod, 'team-a');
  // The route of the ListenerSet is not on the Gateway's own listener, nor the Gateway's route on its port.
  assert.equal((await send(address, 8080, 'a.example.com')).status, 404);
  assert.equal((await send(address, 8090, 'www.example.com')).status, 404);
  const after = await held.get('www.example.com');
  assert.equal(after.status, 200);
  assert.equal(echoBody({ status: after.status, headers: {}, body: after.body }).pod, 'platform');
  assert.equal(held.closed, false);

  const status = await eventually('ListenerSet team-a/team-a Programmed', async () => {
    const [ls] = await adminResources(c.admin, '?kind=ListenerSet&namespace=team-a&name=team-a');
    const s = ls?.status as GatewayStatusView | undefined;
    return condition(s?.conditions, 'Programmed')?.status === 'True' ? s : undefined;
  });
  assert.equal(status.listeners?.[0]?.attachedRoutes, 1);
  const [gateway] = await adminResources(c.admin, '?kind=Gateway&namespace=infra&name=shared');
  assert.equal((gateway?.status as { attachedListenerSets?: number } | undefined)?.attachedListenerSets, 1);
});

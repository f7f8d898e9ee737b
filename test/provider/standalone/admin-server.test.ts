import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isPorticoError } from '../../../src/errors.js';
import { startAdminServer } from '../../../src/provider/standalone/admin-server.js';
import type { AdminState } from '../../../src/provider/standalone/admin-state.js';
import { FIXTURE_PRIVATE_KEY, fixtureState } from './fixture-state.js';

async function serve(t: { after: (fn: () => Promise<void>) => void }, getState: () => AdminState) {
  const server = await startAdminServer({ address: '127.0.0.1:0', getState });
  t.after(() => server.close());
  return (path: string) => fetch(`http://${server.address}${path}`);
}

test('healthz answers at once; readyz is 503 until the first translation is done', async (t) => {
  let state = fixtureState(false);
  const get = await serve(t, () => state);
  assert.equal((await get('/healthz')).status, 200);
  const notReady = await get('/readyz');
  assert.equal(notReady.status, 503);
  assert.match(await notReady.text(), /first translation/);
  state = fixtureState(true);
  assert.equal((await get('/readyz')).status, 200);
});

test('resources are filtered by kind, namespace and name, sorted, with their status', async (t) => {
  const get = await serve(t, () => fixtureState());
  const body = (await (await get('/api/resources?kind=Gateway')).json()) as {
    items: AdminState['resources'];
  };
  assert.deepEqual(
    body.items.map((r) => `${r.metadata.namespace}/${r.metadata.name}`),
    ['default/eg', 'team-a/web'],
  );
  assert.equal(body.items[0]?.apiVersion, 'gateway.networking.k8s.io/v1');
  assert.ok(body.items[0]?.metadata.creationTimestamp);
  assert.deepEqual((body.items[0]?.status as { addresses?: unknown[] } | undefined)?.addresses, [
    { type: 'IPAddress', value: '127.0.1.1' },
  ]);
  const inTeamA = (await (await get('/api/resources?kind=Gateway&namespace=team-a')).json()) as {
    items: unknown[];
  };
  assert.equal(inTeamA.items.length, 1);
  const routes = (await (
    await get('/api/resources?kind=HTTPRoute&namespace=default&name=backend')
  ).json()) as {
    items: { metadata: { name: string } }[];
  };
  assert.deepEqual(
    routes.items.map((r) => r.metadata.name),
    ['backend'],
  );
});

test('the fleet dump never contains a private key', async (t) => {
  const get = await serve(t, () => fixtureState());
  const response = await get('/api/fleets');
  assert.equal(response.status, 200);
  const text = await response.text();
  assert.ok(!text.includes('PRIVATE KEY'), 'private key leaked');
  assert.ok(!text.includes(FIXTURE_PRIVATE_KEY));
  const body = JSON.parse(text) as { items: AdminState['fleets'] };
  assert.equal(body.items[0]?.config?.secrets[0]?.privateKeyPem, '<redacted>');
  assert.match(body.items[0]?.config?.secrets[0]?.certificatePem ?? '', /BEGIN CERTIFICATE/);
  assert.equal(body.items[0]?.nodes[0]?.appliedVersion, '3');
  // The producer's data is untouched.
  assert.equal(fixtureState().fleets[0]?.config?.secrets[0]?.privateKeyPem, FIXTURE_PRIVATE_KEY);
});

test('unknown paths are 404, writes are 405, a failing state producer is a 500', async (t) => {
  let fail = false;
  const get = await serve(t, () => {
    if (fail) throw new Error('boom');
    return fixtureState();
  });
  assert.equal((await get('/nope')).status, 404);
  const server = await startAdminServer({ address: '127.0.0.1:0', getState: fixtureState });
  t.after(() => server.close());
  assert.equal((await fetch(`http://${server.address}/api/fleets`, { method: 'POST' })).status, 405);
  fail = true;
  const failed = await get('/api/resources');
  assert.equal(failed.status, 500);
  assert.match(await failed.text(), /boom/);
});

test('an address in use is an error naming the option', async (t) => {
  const first = await startAdminServer({ address: '127.0.0.1:0', getState: fixtureState });
  t.after(() => first.close());
  await assert.rejects(
    startAdminServer({ address: first.address, getState: fixtureState }),
    (e: unknown) => isPorticoError(e) && /--admin-address: cannot listen on .*in use/.test(e.message),
  );
  await assert.rejects(startAdminServer({ address: 'localhost', getState: fixtureState }), /not HOST:PORT/);
});

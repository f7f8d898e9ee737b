import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { isPorticoError } from '../../../src/platform/errors.js';
import { parseHostPort } from '../../../src/platform/host-port.js';
import { startAdminServer } from '../../../src/provider/standalone/admin-server.js';
import type { AdminState } from '../../../src/provider/standalone/admin-state.js';
import { FIXTURE_PRIVATE_KEY, FIXTURE_SECRET, fixtureState } from './fixture-state.js';

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

test('a Secret is served with its keys but none of its values', async (t) => {
  const get = await serve(t, () => fixtureState());
  for (const path of ['/api/resources?kind=Secret', '/api/resources']) {
    const text = await (await get(path)).text();
    assert.ok(!text.includes(FIXTURE_SECRET.data['tls.key']!), `${path}: the base64 key leaked`);
    assert.ok(!text.includes('PRIVATE KEY'), `${path}: the stringData key leaked`);
    const secret = (JSON.parse(text) as { items: (typeof FIXTURE_SECRET)[] }).items.find(
      (r) => r.kind === 'Secret',
    );
    assert.deepEqual(secret?.data, { 'tls.crt': '<redacted>', 'tls.key': '<redacted>' });
    assert.deepEqual(secret?.stringData, { 'extra.key': '<redacted>' });
    assert.equal(secret?.metadata.name, 'tls');
  }
  assert.equal(
    fixtureState().resources.find((r) => r.kind === 'Secret'),
    FIXTURE_SECRET,
    'untouched',
  );
});

/** One raw request with a Host header of our choosing (fetch always sends the URL's). */
function rawGet(address: string, path: string, host: string | undefined): Promise<number> {
  const { host: ip, port } = parseHostPort(address, 'admin');
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = host === undefined ? {} : { host };
    const req = request(
      { host: ip, port, path, headers, agent: false, setHost: host === undefined },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

test('a request naming another host (DNS rebinding) is refused; the admin address and localhost are not', async (t) => {
  const server = await startAdminServer({ address: '127.0.0.1:0', getState: fixtureState });
  t.after(() => server.close());
  const port = parseHostPort(server.address, 'admin').port;
  assert.equal(await rawGet(server.address, '/api/fleets', 'rebind.attacker.example:' + port), 403);
  assert.equal(await rawGet(server.address, '/healthz', `127.0.0.2:${port}`), 403);
  assert.equal(await rawGet(server.address, '/api/fleets', `127.0.0.1:${port + 1}`), 403);
  assert.equal(await rawGet(server.address, '/api/fleets', ''), 403);
  assert.equal(await rawGet(server.address, '/api/fleets', server.address), 200);
  assert.equal(await rawGet(server.address, '/api/fleets', `localhost:${port}`), 200);
});

test('a non-loopback address is refused unless explicitly allowed', async (t) => {
  await assert.rejects(
    startAdminServer({ address: '0.0.0.0:0', getState: fixtureState }),
    (e: unknown) =>
      isPorticoError(e) &&
      /--admin-address: 0\.0\.0\.0 is not a loopback address.*--allow-remote-admin/.test(e.message),
  );
  const server = await startAdminServer({ address: '0.0.0.0:0', allowRemote: true, getState: fixtureState });
  t.after(() => server.close());
  const port = parseHostPort(server.address, 'admin').port;
  // Bound to every address, it answers on any IP literal, still never on a DNS name.
  assert.equal(await rawGet(`127.0.0.1:${port}`, '/healthz', `127.0.0.1:${port}`), 200);
  assert.equal(await rawGet(`127.0.0.1:${port}`, '/healthz', `rebind.attacker.example:${port}`), 403);
});

// examples/limits as written (its ports moved to free ones): `portico proxy --config-file` with two workers in
// front of `portico echo`. The client behind the trusted loopback peer is the one rate limited, per client
// across both workers; another client has its own budget; a body over the route's limit gets 413.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startPortico, waitForOutputWithin } from '../../support/child.js';
import { freePort, httpRequest } from '../../support/http.js';

test('examples/limits: client IP, a Local rate limit over two workers, a route body limit', async (t) => {
  const [listenerPort, echoPort] = [await freePort(), await freePort()];
  const text = readFileSync('examples/limits/fleet.yaml', 'utf8')
    .replaceAll('8080', String(listenerPort))
    .replaceAll('3001', String(echoPort));
  const file = join(mkdtempSync(join(tmpdir(), 'portico-limits-')), 'fleet.yaml');
  writeFileSync(file, text);
  const echo = startPortico(['echo', '--host', '127.0.0.1', '--port', String(echoPort)]);
  t.after(async () => {
    echo.process.kill('SIGTERM');
    await echo.exited;
  });
  const off = ['--admin-address', 'off', '--ready-address', 'off', '--metrics-address', 'off'];
  const proxy = startPortico([
    'proxy',
    '--config-file',
    file,
    '--bind-address',
    '127.0.0.1',
    '--workers',
    '2',
    ...off,
  ]);
  t.after(async () => {
    proxy.process.kill('SIGTERM');
    await proxy.exited;
  });
  await waitForOutputWithin(proxy, /listening: port-\d+/);
  await waitForOutputWithin(echo, /listening/);

  const from = (client: string, body?: string) =>
    httpRequest(listenerPort, '/api/orders', {
      headers: { 'x-forwarded-for': client },
      ...(body === undefined ? {} : { method: 'POST', body }),
    });
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await from('203.0.113.5')).status);
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
  const other = await from('203.0.113.6');
  assert.equal(other.status, 200);
  assert.deepEqual(JSON.parse(other.body).headers['X-Forwarded-For'], ['203.0.113.6, 127.0.0.1']);
  assert.equal((await from('203.0.113.7', 'x'.repeat(2000))).status, 413);
});

// A portico process whose output pipe lost its reader (its parent died, the terminal closed) keeps running:
// writing a log line must never kill it with an unhandled EPIPE.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startPortico, waitForOutput } from '../support/child.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { freePort, httpRequest } from '../support/http.js';

test('a proxy whose stdout and stderr readers are gone keeps serving, then drains and exits 0', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-epipe-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const host = vhost(port, '*', [route(forward(['default/a:80']))]);
  const file = join(dir, 'fleet.json');
  writeFileSync(
    file,
    JSON.stringify(fleet([{ listener: listener(port), vhosts: [host] }], [upstream('default/a:80', [1])])),
  );
  const child = startPortico([
    'proxy',
    '--config-file',
    file,
    '--bind-address',
    '127.0.0.1',
    '--admin-address',
    'off',
    '--metrics-address',
    'off',
    '--ready-address',
    'off',
    '--drain-seconds',
    '0',
  ]);
  t.after(() => {
    child.process.kill('SIGKILL');
  });
  await waitForOutput(child, /listening: port-\d+/);
  child.process.stdout?.destroy();
  child.process.stderr?.destroy();
  // A request the proxy answers and logs nothing for, then a stop that it logs (draining, drained).
  assert.equal((await httpRequest(port, '/')).status, 502);
  await new Promise((r) => setTimeout(r, 100));
  child.process.kill('SIGTERM');
  assert.equal(await child.exited, 0);
});

// Liveness: a proxy drained behind the controller's back, or hung, loses Programmed and is restarted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { httpRequest } from '../../support/http.js';
import {
  adminGet,
  adminResources,
  condition,
  eventually,
  exampleCopy,
  type GatewayStatusView,
  programmedAddress,
  startStandalone,
  untilStatus,
} from './harness.js';

interface FleetView {
  process?: { pid?: number; state: string; restarts: number; health?: string };
}

async function proxyProcess(admin: string): Promise<NonNullable<FleetView['process']> | undefined> {
  return (await adminGet<{ items: FleetView[] }>(admin, '/api/fleets')).items[0]?.process;
}

async function programmed(admin: string): Promise<string | undefined> {
  const [gateway] = await adminResources(admin, '?kind=Gateway&namespace=default&name=eg');
  return condition((gateway?.status as GatewayStatusView | undefined)?.conditions, 'Programmed')?.status;
}

test('a drained or hung proxy is reported not Programmed and restarted', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.64.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'www.example.com', '/', 200);
  const first = await eventually('a live proxy', async () => {
    const p = await proxyProcess(c.admin);
    return p?.health === 'live' ? p : undefined;
  });

  // Any local process that passes the admin guard can still drain it: the controller must notice.
  const drain = await httpRequest(19000, '/drain', {
    address,
    host: `${address}:19000`,
    method: 'POST',
    headers: { 'x-portico-admin': 'true' },
  });
  assert.equal(drain.status, 202);
  await eventually('Programmed=False while drained', async () =>
    (await programmed(c.admin)) === 'False' ? true : undefined,
  );
  const second = await eventually(
    'a restarted proxy',
    async () => {
      const p = await proxyProcess(c.admin);
      return p?.pid !== first.pid && p?.health === 'live' ? p : undefined;
    },
    30_000,
  );
  assert.equal(second.restarts, 1);
  await untilStatus(address, 8080, 'www.example.com', '/', 200);
  await eventually('Programmed=True again', async () =>
    (await programmed(c.admin)) === 'True' ? true : undefined,
  );
  assert.match(c.child.stdout(), /\[default\/eg\] proxy failed 3 liveness probes in a row .*drained/);

  process.kill(second.pid!, 'SIGSTOP');
  t.after(() => {
    try {
      process.kill(second.pid!, 'SIGKILL');
    } catch {
      // restarted already
    }
  });
  await eventually('Programmed=False while hung', async () =>
    (await programmed(c.admin)) === 'False' ? true : undefined,
  );
  const third = await eventually(
    'a proxy restarted after hanging',
    async () => {
      const p = await proxyProcess(c.admin);
      return p?.pid !== second.pid && p?.health === 'live' ? p : undefined;
    },
    30_000,
  );
  assert.equal(third.restarts, 2);
  await untilStatus(address, 8080, 'www.example.com', '/', 200);
});

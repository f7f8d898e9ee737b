// Proxies outlive their controller: killed (SIGKILL) or stopped (SIGTERM), the controller leaves them serving,
// and the next one on the same state directory adopts them (same process, same address, reconnected to
// discovery) without a refused connection. Only `--stop` drains them.
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fleetInfraName } from '../../../src/ir/fleet-infra.js';
import { startPortico } from '../../support/child.js';
import { freePort, httpRequest } from '../../support/http.js';
import {
  adminGet,
  echoBody,
  eventually,
  exampleCopy,
  programmedAddress,
  type RunningStandalone,
  send,
  startStandalone,
  type TestContext,
  untilStatus,
} from './harness.js';

interface FleetView {
  address?: string;
  process?: { pid?: number; state: string; adopted?: boolean; restarts: number };
}

async function fleetProcess(admin: string): Promise<FleetView | undefined> {
  return (await adminGet<{ items: FleetView[] }>(admin, '/api/fleets')).items[0];
}

/** Requests on fresh connections, one after the other, until stopped: every failure is counted. */
function traffic(address: string, port: number, host: string) {
  let running = true;
  let ok = 0;
  const failures: string[] = [];
  const done = (async () => {
    while (running) {
      try {
        const reply = await send(address, port, host, '/');
        if (reply.status === 200) ok++;
        else failures.push(`HTTP ${reply.status}`);
      } catch (error) {
        failures.push((error as Error).message);
      }
    }
  })();
  return {
    async stop(): Promise<{ ok: number; failures: string[] }> {
      running = false;
      await done;
      return { ok, failures };
    },
  };
}

async function proxyVersion(address: string): Promise<string> {
  const reply = await httpRequest(19000, '/version', { address, host: `${address}:19000` });
  return (JSON.parse(reply.body) as { version: string }).version;
}

async function setup(t: TestContext, pool: string) {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  const discoveryAddress = `127.0.0.1:${await freePort()}`;
  const start = (): Promise<RunningStandalone> =>
    startStandalone(t, { args: ['-f', files], pool, stateDir, discoveryAddress, keepProxies: true });
  return { files, stateDir, start };
}

for (const how of ['SIGKILL', 'SIGTERM'] as const) {
  test(`after a controller ${how === 'SIGKILL' ? 'dies (SIGKILL)' : 'stops (SIGTERM)'}, its proxy keeps serving and the next controller adopts it without a failed request`, async (t) => {
    const { files, stateDir, start } = await setup(t, how === 'SIGKILL' ? '127.0.65.0/24' : '127.0.66.0/24');
    const first = await start();
    const address = await programmedAddress(first.admin, 'default', 'eg');
    await untilStatus(address, 8080, 'www.example.com', '/', 200);
    const before = await eventually('the proxy process', async () => {
      const f = await fleetProcess(first.admin);
      return f?.process?.state === 'running' ? f : undefined;
    });
    const pid = before.process!.pid!;
    const version = await proxyVersion(address);

    const load = traffic(address, 8080, 'www.example.com');
    if (how === 'SIGKILL') first.child.process.kill('SIGKILL');
    else
      assert.equal(await first.stop(), 0, `exit code of a SIGTERM stop; its stderr: ${first.child.stderr()}`);
    await first.child.exited;
    if (how === 'SIGTERM') assert.match(first.child.stdout(), /SIGTERM: stopping; the proxies keep serving/);
    // The proxy writes about the lost stream (to a pipe of the dead controller, it crashed there with EPIPE)...
    const logFile = join(stateDir, 'logs', `${fleetInfraName('default/eg')}.log`);
    await eventually('the proxy to log the lost discovery stream', async () =>
      /discovery stream closed/.test(await readFile(logFile, 'utf8').catch(() => '')) ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 200));
    process.kill(pid, 0); // ...and lives on

    const second = await start();
    assert.equal(await programmedAddress(second.admin, 'default', 'eg'), address);
    const after = await fleetProcess(second.admin);
    assert.deepEqual(after?.process?.pid, pid, 'the same process');
    assert.equal(after?.process?.adopted, true);
    assert.equal(after?.address, address);
    assert.match(
      second.child.stdout(),
      new RegExp(`adopted proxy default/eg \\(pid ${pid}\\) on ${address}`),
    );
    const result = await load.stop();
    assert.deepEqual(result.failures, [], `${result.ok} requests answered`);
    assert.ok(result.ok > 20, `only ${result.ok} requests were sent`);
    // It resynchronised with the new controller without applying anything again...
    assert.equal(await proxyVersion(address), version);

    // ...and takes the new controller's changes.
    await writeFile(
      join(files, 'moved.yaml'),
      `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: moved, namespace: default}
spec:
  parentRefs: [{name: eg}]
  hostnames: [moved.example.com]
  rules: [{backendRefs: [{name: backend-api, port: 3000}]}]
`,
    );
    const moved = await untilStatus(address, 8080, 'moved.example.com', '/', 200);
    assert.equal(echoBody(moved).pod, 'api');
    assert.equal((await fleetProcess(second.admin))?.process?.pid, pid);
  });
}

test('--stop stops the controller and drains its proxies; a second controller on the same state dir is refused', async (t) => {
  const { stateDir, start } = await setup(t, '127.0.67.0/24');
  const first = await start();
  const address = await programmedAddress(first.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'www.example.com', '/', 200);

  const rival = startPortico([
    'standalone',
    '-f',
    stateDir,
    '--state-dir',
    stateDir,
    '--admin-address',
    '127.0.0.1:0',
  ]);
  assert.equal(await rival.exited, 1);
  assert.match(
    rival.stderr(),
    new RegExp(`another standalone controller \\(pid ${first.child.process.pid}\\) uses`),
  );

  const stop = startPortico(['standalone', '--stop', '--state-dir', stateDir]);
  assert.equal(await stop.exited, 0, stop.stderr());
  assert.match(
    stop.stdout(),
    /stopping the controller[\s\S]*draining proxy default\/eg[\s\S]*stopped everything/,
  );
  assert.equal(await first.child.exited, 0);
  await assert.rejects(send(address, 8080, 'www.example.com', '/'), /ECONNREFUSED/);
  assert.deepEqual(await readdir(join(stateDir, 'proxies')), []);
});

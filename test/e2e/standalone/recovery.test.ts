// Recovery: a killed proxy process is restarted and traffic resumes; a restarted controller gives every fleet
// the address it had before (from the state directory).
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  adminGet,
  eventually,
  exampleCopy,
  programmedAddress,
  startStandalone,
  untilStatus,
} from './harness.js';

interface FleetView {
  fleet: string;
  address?: string;
  process?: { pid?: number; state: string; restarts: number };
}

async function fleets(admin: string): Promise<FleetView[]> {
  return (await adminGet<{ items: FleetView[] }>(admin, '/api/fleets')).items;
}

test('a killed proxy is restarted and traffic resumes', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.61.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'www.example.com', '/', 200);
  const [before] = await fleets(c.admin);
  const pid = before?.process?.pid;
  assert.ok(pid !== undefined, JSON.stringify(before));
  process.kill(pid, 'SIGKILL');

  const after = await eventually('a new proxy process', async () => {
    const [f] = await fleets(c.admin);
    return f?.process?.state === 'running' && f.process.pid !== pid ? f : undefined;
  });
  assert.equal(after.process?.restarts, 1);
  assert.equal(after.address, address);
  await untilStatus(address, 8080, 'www.example.com', '/', 200);
  // A person watching the output sees why the proxy came back.
  assert.match(c.child.stdout(), /\[default\/eg\] proxy exited \(SIGKILL\); restarting in \d+ ms/);
});

const SECOND_GATEWAY = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: aaa, namespace: default}
spec:
  gatewayClassName: portico
  listeners: [{name: http, protocol: HTTP, port: 8080}]
`;

test('a restarted controller keeps every fleet on its address', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web']);
  const pool = '127.0.62.0/24';
  const first = await startStandalone(t, { args: ['-f', files], pool, stateDir });
  const eg = await programmedAddress(first.admin, 'default', 'eg');
  // Added later, so it holds the later address; a fresh start in name order would swap them.
  await writeFile(join(files, 'second.yaml'), SECOND_GATEWAY);
  const aaa = await programmedAddress(first.admin, 'default', 'aaa');
  assert.notEqual(aaa, eg);
  assert.equal(await first.stop(), 0);
  assert.match(first.child.stdout(), /SIGTERM: draining proxies and stopping\n(.*\n)*\S+ info stopped\n/);

  const second = await startStandalone(t, { args: ['-f', files], pool, stateDir });
  assert.equal(await programmedAddress(second.admin, 'default', 'eg'), eg);
  assert.equal(await programmedAddress(second.admin, 'default', 'aaa'), aaa);
  await untilStatus(eg, 8080, 'www.example.com', '/', 200);
});

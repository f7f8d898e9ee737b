// Two standalone controllers on one host never hand out the same address (host-wide claims), and a fleet whose
// address turns out to be taken by another program moves to a free one instead of crash-looping.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { test } from 'node:test';
import { defer, echoBody, exampleCopy, programmedAddress, startStandalone, untilStatus } from './harness.js';

test('a second controller with its own state dir gets other addresses from the same pool', async (t) => {
  const pool = '127.0.69.0/24';
  const copyA = await exampleCopy(t, 'quickstart', ['web-a']);
  const copyB = await exampleCopy(t, 'quickstart', ['web-b']);
  const a = await startStandalone(t, { args: ['-f', copyA.files], pool, stateDir: copyA.stateDir });
  const addressA = await programmedAddress(a.admin, 'default', 'eg');
  const b = await startStandalone(t, { args: ['-f', copyB.files], pool, stateDir: copyB.stateDir });
  const addressB = await programmedAddress(b.admin, 'default', 'eg');
  assert.notEqual(addressB, addressA);
  assert.equal(echoBody(await untilStatus(addressA, 8080, 'www.example.com', '/', 200)).pod, 'web-a');
  assert.equal(echoBody(await untilStatus(addressB, 8080, 'www.example.com', '/', 200)).pod, 'web-b');
  assert.doesNotMatch(b.child.stdout(), /EADDRINUSE|restarting in/);
});

test('a fleet whose address another program binds moves to a free address', async (t) => {
  // Not a controller of ours, so no claim: only the failed bind tells.
  const squatter: Server = createServer();
  await new Promise<void>((resolve) => squatter.listen(19000, '127.0.70.1', resolve));
  defer(t, () => new Promise<void>((resolve) => squatter.close(() => resolve())));
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.70.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  assert.equal(address, '127.0.70.2');
  await untilStatus(address, 8080, 'www.example.com', '/', 200);
  assert.match(c.child.stdout(), /fleet default\/eg: 127\.0\.70\.1 is in use by another process; moving it/);
});

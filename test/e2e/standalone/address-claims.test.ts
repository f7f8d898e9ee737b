// Two standalone controllers on one host never hand out the same address (host-wide claims), and a fleet whose
// address turns out to be taken by another program moves to a free one instead of crash-looping.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  copyExample,
  defer,
  echo,
  echoBody,
  programmedAddress,
  startStandalone,
  tempDir,
  untilStatus,
} from './harness.js';

test('a second controller with its own state dir gets other addresses from the same pool', async (t) => {
  const pool = '127.0.69.0/24';
  const dir = await tempDir(t, 'claims');
  const filesA = await copyExample('quickstart', join(dir, 'a'), new Map([[3001, await echo(t, 'web-a')]]));
  const filesB = await copyExample('quickstart', join(dir, 'b'), new Map([[3001, await echo(t, 'web-b')]]));
  const a = await startStandalone(t, { args: ['-f', filesA], pool, stateDir: join(dir, 'state-a') });
  const addressA = await programmedAddress(a.admin, 'default', 'eg');
  const b = await startStandalone(t, { args: ['-f', filesB], pool, stateDir: join(dir, 'state-b') });
  const addressB = await programmedAddress(b.admin, 'default', 'eg');
  assert.notEqual(addressB, addressA);
  assert.equal(echoBody(await untilStatus(addressA, 8080, 'www.example.com', '/', 200)).pod, 'web-a');
  assert.equal(echoBody(await untilStatus(addressB, 8080, 'www.example.com', '/', 200)).pod, 'web-b');
  assert.doesNotMatch(b.child.stdout(), /EADDRINUSE|restarting in/);
});

test('a fleet whose address another program binds moves to a free address', async (t) => {
  const dir = await tempDir(t, 'moved');
  // Not a controller of ours, so no claim: only the failed bind tells.
  const squatter: Server = createServer();
  await new Promise<void>((resolve) => squatter.listen(19000, '127.0.70.1', resolve));
  defer(t, () => new Promise<void>((resolve) => squatter.close(() => resolve())));
  const files = await copyExample('quickstart', dir, new Map([[3001, await echo(t, 'web')]]));
  const c = await startStandalone(t, {
    args: ['-f', files],
    pool: '127.0.70.0/24',
    stateDir: join(dir, 'state'),
  });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  assert.equal(address, '127.0.70.2');
  await untilStatus(address, 8080, 'www.example.com', '/', 200);
  assert.match(c.child.stdout(), /fleet default\/eg: 127\.0\.70\.1 is in use by another process; moving it/);
});

// `npm start` itself: scripts/quickstart.mjs with its echo backends on 3001/3002 (fixed by the example files,
// so this is the only test that uses them), its printed curl commands, `portico get`, and Ctrl-C.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { PORTICO_MAIN, REPO_ROOT } from '../../support/portico.js';
import { defer, echoBody, eventually, send, tempDir } from './harness.js';

test('the quickstart starts, prints working curl commands, and stops cleanly on SIGINT', async (t) => {
  const dir = await tempDir(t, 'quickstart');
  // As `npm start -- OPTIONS` runs it: the options go on to `portico standalone`.
  const options = [
    ['--admin-address', '127.0.0.1:0'],
    ['--discovery-address', '127.0.0.1:0'],
    ['--address-pool', '127.0.31.0/24'],
    ['--state-dir', join(dir, 'state')],
    ['--proxy-drain-seconds', '0'],
  ].flat();
  const script = spawn(process.execPath, [join(REPO_ROOT, 'scripts/quickstart.mjs'), ...options], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  script.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  script.stderr.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  const exited = new Promise<number | null>((resolve) => script.on('exit', (code) => resolve(code)));
  // On failure: SIGTERM lets the script stop its controller and backends; SIGKILL only if that hangs.
  defer(t, async () => {
    if (script.exitCode !== null) return;
    script.kill('SIGTERM');
    const timer = setTimeout(() => script.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  });

  await eventually('the quickstart banner', async () =>
    out.includes('quickstart is running') ? true : undefined,
  );
  const curl = /curl -i -H 'Host: www\.example\.com' http:\/\/(127\.0\.31\.\d+):(\d+)\//.exec(out);
  assert.ok(curl, out);
  const [, address, port] = curl;
  const web = await send(address!, Number(port), 'www.example.com', '/');
  assert.equal(web.status, 200);
  assert.equal(echoBody(web).service, 'backend-web');
  assert.equal(web.headers.server, 'portico');
  const api = await send(address!, Number(port), 'www.example.com', '/api/users?id=1');
  assert.equal(echoBody(api).service, 'backend-api');
  assert.equal(echoBody(api).path, '/api/users?id=1');
  const unknown = await send(address!, Number(port), 'unknown.example.com', '/');
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body, '');

  const getLine = /node dist\/cli\/main\.js get gateways --admin-address (\S+)/.exec(out);
  assert.ok(getLine, out);
  const get = spawnSync(process.execPath, [PORTICO_MAIN, 'get', 'gateways', '--admin-address', getLine[1]!], {
    encoding: 'utf8',
  });
  assert.equal(get.status, 0, get.stderr);
  assert.match(
    get.stdout,
    new RegExp(`^eg\\s+portico\\s+${address!.replaceAll('.', '\\.')}\\s+True\\s`, 'm'),
  );

  script.kill('SIGINT');
  assert.equal(await exited, 0, out);
  assert.match(out, /SIGTERM: draining proxies and stopping[\s\S]*stopped/);
  // The proxy is gone with the controller: its address no longer answers.
  await assert.rejects(send(address!, Number(port), 'www.example.com', '/'));
});

test('a quickstart whose controller cannot start fails, and takes its echo backends with it', async (t) => {
  const dir = await tempDir(t, 'quickstart-fails');
  // An admin address the controller cannot take (another program's): it exits 1 at its start.
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  defer(t, () => new Promise<void>((resolve) => taken.close(() => resolve())));
  const { port } = taken.address() as AddressInfo;
  const script = spawn(
    process.execPath,
    [
      join(REPO_ROOT, 'scripts/quickstart.mjs'),
      '--admin-address',
      `127.0.0.1:${port}`,
      '--discovery-address',
      '127.0.0.1:0',
      '--state-dir',
      join(dir, 'state'),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  script.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  script.stderr.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  const exited = new Promise<number | null>((resolve) => script.on('exit', (code) => resolve(code)));
  defer(t, async () => {
    if (script.exitCode === null) script.kill('SIGKILL');
  });
  const code = await exited;
  assert.notEqual(code, 0, out);
  assert.match(out, /--admin-address: cannot listen on/);
  // It failed before reading the files, so no proxy was started to be left behind (each would log here).
  assert.deepEqual(readdirSync(join(dir, 'state', 'logs')), []);
  // The backends went with it: their fixed ports take a new listener.
  for (const backend of [3001, 3002]) {
    await eventually(`port ${backend} free`, async () => {
      const probe = createServer();
      const free = await new Promise<boolean>((resolve) => {
        probe.once('error', () => resolve(false));
        probe.listen(backend, '127.0.0.1', () => resolve(true));
      });
      if (free) await new Promise<void>((resolve) => probe.close(() => resolve()));
      return free || undefined;
    });
  }
});

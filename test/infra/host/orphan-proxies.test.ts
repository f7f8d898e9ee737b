import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  createPidFileWriter,
  readPidFile,
  stopOrphanProxies,
} from '../../../src/infra/host/orphan-proxies.js';
import { createProxySupervisor } from '../../../src/infra/host/supervisor.js';

const FAKE_PROXY = fileURLToPath(new URL('./fake-proxy.mjs', import.meta.url));

async function tempDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portico-orphans-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Spawns a process and waits for its first line of output (so its signal handlers are installed). */
function started(t: { after: (fn: () => void) => void }, args: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  t.after(() => {
    child.kill('SIGKILL');
  });
  return new Promise((resolve) => child.stdout?.once('data', () => resolve(child)));
}

const exitOf = (child: ChildProcess) =>
  new Promise<string | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.signalCode);
    else child.once('exit', (_code, signal) => resolve(signal));
  });

test('the supervisor records the pids of its children', async (t) => {
  const pidFile = join(await tempDir(t), 'proxies.json');
  const supervisor = createProxySupervisor({ entryPoint: FAKE_PROXY, pidFile, log: () => {} });
  t.after(() => supervisor.stopAll());
  supervisor.sync([{ fleet: 'default/eg', address: '127.0.1.1', args: ['proxy'] }]);
  const pid = supervisor.list()[0]?.pid;
  assert.ok(pid !== undefined);
  let recorded = await readPidFile(pidFile);
  for (let i = 0; i < 200 && recorded[0]?.pid !== pid; i++) {
    await new Promise((r) => setTimeout(r, 25));
    recorded = await readPidFile(pidFile);
  }
  assert.deepEqual(recorded, [{ fleet: 'default/eg', pid, entryPoint: FAKE_PROXY }]);
  await supervisor.stopAll();
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(JSON.parse(await readFile(pidFile, 'utf8')).proxies, []);
});

test('orphaned proxies are stopped; a pid now running something else is left alone', async (t) => {
  const pidFile = join(await tempDir(t), 'proxies.json');
  const orphan = await started(t, [FAKE_PROXY, 'proxy', '--fleet', 'default/eg']);
  const stranger = await started(t, ['-e', 'console.log("up"); setTimeout(() => {}, 60000)']);
  const write = createPidFileWriter(pidFile);
  write([
    { fleet: 'default/eg', pid: orphan.pid ?? -1, entryPoint: FAKE_PROXY },
    { fleet: 'reused/pid', pid: stranger.pid ?? -1, entryPoint: FAKE_PROXY },
  ]);
  for (let i = 0; i < 200 && (await readPidFile(pidFile)).length < 2; i++)
    await new Promise((r) => setTimeout(r, 25));
  const stopped = await stopOrphanProxies(pidFile, 2000);
  assert.deepEqual(
    stopped.map((p) => p.fleet),
    ['default/eg'],
  );
  assert.equal(await exitOf(orphan), null, 'the fake proxy drains on SIGTERM and exits 0');
  assert.equal(stranger.exitCode, null);
  assert.equal(stranger.signalCode, null);
});

test('no pid file, no orphans', async (t) => {
  assert.deepEqual(await stopOrphanProxies(join(await tempDir(t), 'absent.json')), []);
});

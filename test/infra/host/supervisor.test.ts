import assert from 'node:assert/strict';
import {
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { matchesProcess } from '../../../src/infra/host/process-identity.js';
import { readProxyRecords } from '../../../src/infra/host/proxy-records.js';
import {
  createProxySupervisor,
  formatProxyLogLine,
  type ProxyLogLine,
  type ProxySpec,
  type ProxySupervisorOptions,
  proxyAccessLogFile,
  proxyLogFile,
} from '../../../src/infra/host/supervisor.js';
import { trimLog } from '../../../src/infra/host/watched-process.js';
import { proxySettingsFlags } from '../../../src/ir/proxy-flags.js';
import type { ProxySettings } from '../../../src/ir/proxy-settings.js';
import { backoffDelay } from '../../../src/platform/backoff.js';
import { freePort } from '../../support/http.js';

const FAKE_PROXY = fileURLToPath(new URL('./fake-proxy.mjs', import.meta.url));
const WAIT_LIMIT_MS = 15_000;

function harness(
  t: { after: (fn: () => Promise<void>) => void },
  extra: Partial<ProxySupervisorOptions> = {},
) {
  const lines: ProxyLogLine[] = [];
  let wake: (() => void) | undefined;
  const logDir = mkdtempSync(join(tmpdir(), 'portico-supervisor-'));
  t.after(async () => rmSync(logDir, { recursive: true, force: true }));
  const supervisor = createProxySupervisor({
    logDir,
    entryPoint: FAKE_PROXY,
    backoffInitialMs: 20,
    backoffMaxMs: 100,
    stopGraceMs: 5_000,
    log: (line) => {
      lines.push(line);
      wake?.();
    },
    onChange: () => wake?.(),
    ...extra,
  });
  t.after(() => supervisor.stopAll());
  async function until<T>(probe: () => T | undefined | false, what: string): Promise<T> {
    const deadline = Date.now() + WAIT_LIMIT_MS;
    for (;;) {
      const value = probe();
      if (value !== undefined && value !== false) return value;
      if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 50);
      });
    }
  }
  /** The port the fleet's current process listens on (from its log), once it is up. */
  const portOf = (fleet: string, pid: number | undefined) =>
    until(() => {
      const current = supervisor.list().find((p) => p.fleet === fleet);
      if (current?.pid === undefined || current.pid === pid) return undefined;
      const ready = lines.find((l) => l.fleet === fleet && l.line.endsWith(` as ${current.pid}`));
      const port = ready?.line.split(' ')[2];
      return port === undefined ? undefined : { port: Number(port), pid: current.pid };
    }, `${fleet} listening`);
  const ask = async (port: number, path = '/') =>
    (await (await fetch(`http://127.0.0.1:${port}${path}`)).text()) as string;
  return { supervisor, lines, until, portOf, ask, logDir };
}

const spec = (fleet: string, address: string, ...extra: string[]) => ({
  fleet,
  address,
  args: ['proxy', '--fleet', fleet, '--bind-address', address, ...extra],
});

test('the backoff doubles from its start up to its cap', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 10].map((n) => backoffDelay(n, { firstMs: 500, maxMs: 5000 })),
    [500, 1000, 2000, 4000, 5000, 5000, 5000],
  );
  assert.equal(formatProxyLogLine({ fleet: 'default/eg', source: 'proxy', line: 'hi' }), '[default/eg] hi');
});

test('one process per fleet, with its arguments, and its output forwarded under its fleet', async (t) => {
  const { supervisor, lines, until, portOf, ask } = harness(t);
  supervisor.sync([spec('default/eg', '127.0.1.1'), spec('team-a/web', '127.0.1.2')]);
  const eg = await portOf('default/eg', undefined);
  const web = await portOf('team-a/web', undefined);
  assert.notEqual(eg.pid, web.pid);
  const answer = JSON.parse(await ask(eg.port));
  assert.deepEqual(answer.args, ['proxy', '--fleet', 'default/eg', '--bind-address', '127.0.1.1']);
  await until(
    () =>
      lines.some(
        (l) => l.fleet === 'team-a/web' && l.source === 'proxy' && l.line === 'fleet team-a/web warming up',
      ),
    'stderr forwarded',
  );
  const listed = supervisor.list();
  assert.deepEqual(
    listed.map((p) => [p.fleet, p.address, p.state, p.restarts]),
    [
      ['default/eg', '127.0.1.1', 'running', 0],
      ['team-a/web', '127.0.1.2', 'running', 0],
    ],
  );
  // The same desired set again changes nothing.
  supervisor.sync([spec('team-a/web', '127.0.1.2'), spec('default/eg', '127.0.1.1')]);
  assert.deepEqual(
    supervisor.list().map((p) => p.pid),
    [eg.pid, web.pid],
  );
});

test('a crashed process is restarted, and its exit is recorded', async (t) => {
  const { supervisor, until, portOf, ask } = harness(t);
  supervisor.sync([spec('default/eg', '127.0.1.1')]);
  const first = await portOf('default/eg', undefined);
  await ask(first.port, '/crash');
  const second = await portOf('default/eg', first.pid);
  assert.notEqual(second.pid, first.pid);
  const info = await until(() => supervisor.list().find((p) => p.state === 'running'), 'running again');
  assert.equal(info.restarts, 1);
  assert.equal(info.lastExit?.code, 3);
  assert.match(await ask(second.port), /default\/eg/);
});

test('a crash loop backs off instead of spinning, and keeps trying', async (t) => {
  const { supervisor, until, lines } = harness(t);
  supervisor.sync([spec('loop', '127.0.1.9', '--crash-after-ms', '0')]);
  await until(() => (supervisor.list()[0]?.restarts ?? 0) >= 3, 'three restarts');
  const info = supervisor.list()[0];
  assert.equal(info?.lastExit?.code, 7);
  assert.ok(lines.some((l) => /proxy exited \(code 7\); restarting in \d+ ms/.test(l.line)));
  await until(() => supervisor.list()[0]?.state === 'backoff', 'the backoff state');
});

test('a removed fleet is drained with SIGTERM and disappears', async (t) => {
  const { supervisor, until, lines, portOf } = harness(t);
  supervisor.sync([spec('default/eg', '127.0.1.1'), spec('team-a/web', '127.0.1.2')]);
  const web = await portOf('team-a/web', undefined);
  supervisor.sync([spec('default/eg', '127.0.1.1')]);
  assert.equal(supervisor.list().find((p) => p.fleet === 'team-a/web')?.state, 'stopping');
  await until(() => supervisor.list().length === 1, 'the removal');
  assert.ok(lines.some((l) => l.fleet === 'team-a/web' && l.line === 'draining'));
  assert.throws(() => process.kill(web.pid, 0), /ESRCH/);
});

test('changed arguments restart the process with the new ones', async (t) => {
  const { supervisor, portOf, ask, until } = harness(t);
  supervisor.sync([spec('default/eg', '127.0.1.1')]);
  const first = await portOf('default/eg', undefined);
  supervisor.sync([spec('default/eg', '127.0.1.1', '--drain-seconds', '1')]);
  const second = await portOf('default/eg', first.pid);
  const answer = JSON.parse(await ask(second.port));
  assert.deepEqual(answer.args.slice(-2), ['--drain-seconds', '1']);
  const info = await until(() => supervisor.list().find((p) => p.state === 'running'), 'running');
  assert.equal(info.restarts, 1);
  assert.equal(info.lastExit?.code, 0, 'the old process drained and exited cleanly');
});

const SETTINGS: ProxySettings = {
  logLevel: 'info',
  accessLog: { format: 'json' },
  drainSeconds: 5,
  maxDrainSeconds: 60,
  workers: 2,
};

/** A spec whose process listens on `port`, which is also its admin API and liveness endpoint. */
const settingsSpec = (port: number, settings: ProxySettings, ...extra: string[]): ProxySpec => ({
  ...spec('default/eg', '127.0.1.1', '--port', String(port), ...extra),
  settings,
  admin: { host: '127.0.0.1', port },
  liveness: { host: '127.0.0.1', port, path: '/live' },
});

test('changed settings are sent to the running process: nothing restarts, the record follows', async (t) => {
  const recordsDir = mkdtempSync(join(tmpdir(), 'portico-records-'));
  t.after(async () => rmSync(recordsDir, { recursive: true, force: true }));
  const { supervisor, portOf, ask, until } = harness(t, { recordsDir, probeIntervalMs: 50 });
  const port = await freePort();
  supervisor.sync([settingsSpec(port, SETTINGS)]);
  const first = await portOf('default/eg', undefined);
  const started = JSON.parse(await ask(first.port));
  assert.deepEqual(
    started.args.slice(-10),
    proxySettingsFlags(SETTINGS),
    'it started with every setting as flags',
  );
  await until(() => supervisor.list()[0]?.health === 'live', 'a probe answered');
  const changed = {
    ...SETTINGS,
    logLevel: 'debug' as const,
    accessLog: { format: 'text' as const },
    workers: 3,
  };
  supervisor.sync([settingsSpec(port, changed)]);
  let taken: unknown = null;
  for (const deadline = Date.now() + WAIT_LIMIT_MS; taken === null && Date.now() < deadline; ) {
    taken = JSON.parse(await ask(port, '/settings'));
    if (taken === null) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.deepEqual(taken, changed, 'the settings taken in place');
  await until(
    () => readProxyRecords(recordsDir, () => {})[0]?.settings?.workers === 3,
    'the record rewritten',
  );
  const [record] = readProxyRecords(recordsDir, () => {});
  assert.equal(record?.pid, first.pid);
  assert.deepEqual(
    record?.argv.slice(-10),
    proxySettingsFlags(SETTINGS),
    'its identity is still how it started',
  );
  const info = supervisor.list()[0];
  assert.equal(info?.pid, first.pid);
  assert.equal(info?.restarts, 0);
});

test("settings changed behind the supervisor's back are put back, without a restart", async (t) => {
  const { supervisor, portOf, ask, until, lines } = harness(t, { probeIntervalMs: 50 });
  const port = await freePort();
  supervisor.sync([settingsSpec(port, SETTINGS)]);
  const first = await portOf('default/eg', undefined);
  await until(() => supervisor.list()[0]?.health === 'live', 'a probe answered');
  // Anything on the proxy's loopback can PUT /settings: here, the access log off and spans sent elsewhere.
  const rogue = {
    ...SETTINGS,
    accessLog: { format: 'off' },
    tracing: { endpoint: 'http://127.0.0.9:4318/v1/traces' },
  };
  const put = await fetch(`http://127.0.0.1:${port}/settings`, {
    method: 'PUT',
    body: JSON.stringify(rogue),
  });
  assert.equal(put.status, 200);
  await until(
    () => lines.some((l) => l.source === 'supervisor' && l.line.includes('changed by someone else')),
    'the change seen',
  );
  // The supervisor's PUT follows the line: what the process shows turns back to the supervisor's settings.
  let shown: unknown = rogue;
  for (const deadline = Date.now() + WAIT_LIMIT_MS; Date.now() < deadline; ) {
    shown = JSON.parse(await ask(port, '/settings'));
    if (JSON.stringify(shown) === JSON.stringify(SETTINGS)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.deepEqual(shown, SETTINGS);
  assert.equal(supervisor.list()[0]?.pid, first.pid, 'the same process');
  assert.equal(supervisor.list()[0]?.restarts, 0);
});

test('settings the process refuses restart it with them', async (t) => {
  const { supervisor, portOf, ask, until, lines } = harness(t, { probeIntervalMs: 50 });
  const port = await freePort();
  supervisor.sync([settingsSpec(port, SETTINGS, '--refuse-settings')]);
  const first = await portOf('default/eg', undefined);
  await until(() => supervisor.list()[0]?.health === 'live', 'a probe answered');
  const more = { ...SETTINGS, workers: 4 };
  supervisor.sync([settingsSpec(port, more, '--refuse-settings')]);
  const second = await portOf('default/eg', first.pid);
  const answer = JSON.parse(await ask(second.port));
  assert.deepEqual(answer.args.slice(-10), proxySettingsFlags(more));
  assert.ok(lines.some((l) => l.source === 'supervisor' && l.line.includes('refused by --refuse-settings')));
  assert.equal(supervisor.list()[0]?.restarts, 1);
});

test('a process ignoring SIGTERM is killed after the grace period; stopAll waits for every exit', async (t) => {
  const { supervisor, portOf } = harness(t, { stopGraceMs: 300 });
  supervisor.sync([spec('stubborn', '127.0.1.3', '--ignore-sigterm'), spec('polite', '127.0.1.4')]);
  const stubborn = await portOf('stubborn', undefined);
  const polite = await portOf('polite', undefined);
  await supervisor.stopAll();
  assert.deepEqual(supervisor.list(), []);
  assert.throws(() => process.kill(stubborn.pid, 0), /ESRCH/);
  assert.throws(() => process.kill(polite.pid, 0), /ESRCH/);
  assert.throws(() => supervisor.sync([spec('late', '127.0.1.5')]), /shutting down/);
});

test('a proxy started with a drain longer than the grace period gets all of it, and 5 s more', async (t) => {
  const { supervisor, portOf } = harness(t, { stopGraceMs: 300 });
  supervisor.sync([spec('slow-drain', '127.0.1.7', '--ignore-sigterm', '--max-drain-seconds', '1')]);
  const { pid } = await portOf('slow-drain', undefined);
  const stopped = supervisor.stopAll();
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  assert.doesNotThrow(() => process.kill(pid, 0), 'still draining well past the 300 ms grace');
  await stopped;
  assert.throws(() => process.kill(pid, 0), /ESRCH/);
});

test('a fleet listed twice is refused', (t) => {
  const { supervisor } = harness(t);
  assert.throws(
    () => supervisor.sync([spec('a', '127.0.1.1'), spec('a', '127.0.1.2')]),
    /fleet 'a' is listed twice/,
  );
  assert.deepEqual(supervisor.list(), []);
});

test('an entry point that cannot run is retried with backoff, never crashing the supervisor', async (t) => {
  const { supervisor, until } = harness(t, { entryPoint: '/nonexistent/portico.js' });
  supervisor.sync([spec('broken', '127.0.1.6')]);
  const info = await until(
    () => supervisor.list().find((p) => p.restarts >= 1 && p.state === 'backoff'),
    'a retry',
  );
  assert.equal(info.lastExit?.code, 1);
});

test('a fleet removed while backing off goes away at once', async (t) => {
  let changes = 0;
  const { supervisor, until } = harness(t, { backoffInitialMs: 60_000, onChange: () => changes++ });
  supervisor.sync([spec('loop', '127.0.1.9', '--crash-after-ms', '0')]);
  await until(() => supervisor.list()[0]?.state === 'backoff', 'the backoff');
  const before = changes;
  supervisor.sync([]);
  assert.deepEqual(supervisor.list(), []);
  assert.ok(changes > before, 'the removal was announced');
});

test('a process that stops answering its liveness probe (drained, or hung) is killed and started again', async (t) => {
  const { supervisor, until, lines, ask } = harness(t, {
    probeIntervalMs: 50,
    probeTimeoutMs: 300,
    probeFailureThreshold: 3,
    probeStartupGraceMs: 5_000,
  });
  const port = await freePort();
  const liveness = { host: '127.0.0.1', port, path: '/live' };
  supervisor.sync([{ ...spec('default/eg', '127.0.1.1', '--port', String(port)), liveness }]);
  const first = await until(() => supervisor.list().find((p) => p.health === 'live'), 'live');

  await ask(port, '/break'); // answers 503 from now on, as a drained proxy does
  const second = await until(
    () => supervisor.list().find((p) => p.health === 'live' && p.pid !== first.pid),
    'a new live process after the failed probes',
  );
  assert.equal(second.restarts, 1);
  assert.equal(second.lastExit?.signal, 'SIGKILL');
  assert.ok(lines.some((l) => /failed 3 liveness probes in a row .*HTTP 503: not live: broken/.test(l.line)));

  process.kill(second.pid!, 'SIGSTOP'); // hung: the kernel still accepts connections, nothing answers
  const third = await until(
    () => supervisor.list().find((p) => p.health === 'live' && p.pid !== second.pid),
    'a new live process after the hung one',
  );
  assert.equal(third.restarts, 2);
  assert.throws(() => process.kill(second.pid!, 0), /ESRCH/);
  assert.ok(lines.some((l) => /liveness probes in a row .*no answer within 300 ms/.test(l.line)));
});

test('while a process fails its probe, it is reported failing, not live', async (t) => {
  const { supervisor, until, ask } = harness(t, {
    probeIntervalMs: 50,
    probeTimeoutMs: 300,
    probeFailureThreshold: 1_000,
  });
  const port = await freePort();
  supervisor.sync([
    {
      ...spec('default/eg', '127.0.1.1', '--port', String(port)),
      liveness: { host: '127.0.0.1', port, path: '/live' },
    },
  ]);
  await until(() => supervisor.list()[0]?.health === 'live', 'live');
  await ask(port, '/break');
  const failing = await until(() => supervisor.list().find((p) => p.health === 'failing'), 'failing');
  assert.match(failing.healthError ?? '', /HTTP 503/);
});

/** Session id of a process (field 6 of /proc/N/stat). */
function sessionOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]);
}

test('proxies run in their own session and write to their log file, never to a pipe of ours', async (t) => {
  const { supervisor, portOf, logDir, until } = harness(t);
  supervisor.sync([spec('default/eg', '127.0.1.1')]);
  const { pid } = await portOf('default/eg', undefined);
  assert.equal(sessionOf(pid), pid, 'a session leader: no terminal signal of ours reaches it');
  assert.notEqual(sessionOf(pid), sessionOf(process.pid));
  const file = proxyLogFile(logDir, 'default/eg');
  const log = await until(() => {
    const text = readFileSync(file, 'utf8');
    return text.includes('warming up') ? text : undefined;
  }, 'both lines in the log');
  assert.match(log, new RegExp(`listening on \\d+ as ${pid}\\n`));
  assert.match(log, /fleet default\/eg warming up/);
  // stderr is the proxy's own log; stdout its access log, in a file of its own.
  assert.equal(readlinkSync(`/proc/${pid}/fd/2`), proxyLogFile(logDir, 'default/eg'));
  assert.equal(readlinkSync(`/proc/${pid}/fd/1`), proxyAccessLogFile(logDir, 'default/eg'));
});

test("a proxy's access log is trimmed while it runs: the lines move to .1 and the writer goes on at the start", () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-trim-'));
  const file = join(dir, 'access.log');
  const fd = openSync(file, 'a');
  try {
    writeSync(fd, 'x'.repeat(100));
    trimLog(file, 200);
    assert.equal(statSync(file).size, 100, 'under the bound: left alone');
    writeSync(fd, 'y'.repeat(150));
    trimLog(file, 200);
    assert.equal(readFileSync(`${file}.1`, 'utf8'), `${'x'.repeat(100)}${'y'.repeat(150)}`);
    assert.equal(statSync(file).size, 0);
    writeSync(fd, 'next line\n');
    assert.equal(readFileSync(file, 'utf8'), 'next line\n', 'the appending writer continues at the new end');
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('detached proxies keep running and recorded; a new supervisor adopts them and watches them again', async (t) => {
  const recordsDir = mkdtempSync(join(tmpdir(), 'portico-records-'));
  t.after(() => rmSync(recordsDir, { recursive: true, force: true }));
  const first = harness(t, { recordsDir });
  first.supervisor.sync([spec('default/eg', '127.0.1.1'), spec('team-a/web', '127.0.1.2')]);
  const eg = await first.portOf('default/eg', undefined);
  const web = await first.portOf('team-a/web', undefined);
  first.supervisor.detach();
  assert.deepEqual(first.supervisor.list(), []);
  await new Promise((r) => setTimeout(r, 100));
  assert.match(await first.ask(eg.port), /default\/eg/, 'still serving after the supervisor let go');

  const records = readProxyRecords(recordsDir, () => assert.fail('a malformed record'));
  assert.deepEqual(
    records.map((r) => [r.fleet, r.pid, r.address]),
    [
      ['default/eg', eg.pid, '127.0.1.1'],
      ['team-a/web', web.pid, '127.0.1.2'],
    ],
  );
  for (const record of records) assert.equal(matchesProcess(record), 'yes');

  const second = harness(t, { recordsDir });
  second.supervisor.adopt(records);
  // The same desired set keeps both processes; a changed command line replaces only that one.
  second.supervisor.sync([
    spec('default/eg', '127.0.1.1'),
    spec('team-a/web', '127.0.1.2', '--drain-seconds', '1'),
  ]);
  assert.deepEqual(
    second.supervisor.list().map((p) => [p.fleet, p.pid, p.adopted, p.state]),
    [
      ['default/eg', eg.pid, true, 'running'],
      ['team-a/web', web.pid, true, 'stopping'],
    ],
  );
  // Adopted ones of this build are told to reconnect to discovery now.
  await second.until(
    () => second.lines.some((l) => l.fleet === 'default/eg' && l.line === 'SIGHUP: reconnecting'),
    'the SIGHUP',
  );
  const replaced = await second.portOf('team-a/web', web.pid);
  assert.notEqual(replaced.pid, web.pid);
  assert.throws(() => process.kill(web.pid, 0), /ESRCH/, 'the old process drained and exited');

  // An adopted process that dies is noticed (it is not our child: no exit event) and started again.
  process.kill(eg.pid, 'SIGKILL');
  const restarted = await second.portOf('default/eg', eg.pid);
  assert.notEqual(restarted.pid, eg.pid);
  assert.ok(
    second.lines.some((l) => l.fleet === 'default/eg' && /proxy exited \(exit status unknown\)/.test(l.line)),
  );
  const info = second.supervisor.list().find((p) => p.fleet === 'default/eg');
  assert.equal(info?.adopted, false);
  assert.equal(info?.restarts, 1);
  await second.supervisor.stopAll();
  assert.deepEqual(
    readProxyRecords(recordsDir, () => {}),
    [],
    'stopped proxies leave no record',
  );
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  backoffDelay,
  createProxySupervisor,
  formatProxyLogLine,
  type ProxyLogLine,
  type ProxySupervisorOptions,
} from '../../../src/infra/host/supervisor.js';

const FAKE_PROXY = fileURLToPath(new URL('./fake-proxy.mjs', import.meta.url));
const WAIT_LIMIT_MS = 15_000;

function harness(
  t: { after: (fn: () => Promise<void>) => void },
  extra: Partial<ProxySupervisorOptions> = {},
) {
  const lines: ProxyLogLine[] = [];
  let wake: (() => void) | undefined;
  const supervisor = createProxySupervisor({
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
  return { supervisor, lines, until, portOf, ask };
}

const spec = (fleet: string, address: string, ...extra: string[]) => ({
  fleet,
  address,
  args: ['proxy', '--fleet', fleet, '--bind-address', address, ...extra],
});

test('the backoff doubles from its start up to its cap', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 10].map((n) => backoffDelay(n, 500, 5000)),
    [500, 1000, 2000, 4000, 5000, 5000, 5000],
  );
  assert.equal(formatProxyLogLine({ fleet: 'default/eg', stream: 'stdout', line: 'hi' }), '[default/eg] hi');
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
        (l) => l.fleet === 'team-a/web' && l.stream === 'stderr' && l.line === 'fleet team-a/web warming up',
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

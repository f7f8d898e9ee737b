// --log-format: text lines start with their RFC 3339 time; json writes one {time, level, msg} record a line —
// the standalone controller (its own lines and the proxy lines it relays) and a proxy on its own.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startPortico, waitForOutput } from '../../support/child.js';
import { fleet, forward, listener, route, upstream, vhost } from '../../support/fleet.js';
import { freePort, httpRequest } from '../../support/http.js';
import { exampleCopy, programmedAddress, startStandalone } from './harness.js';

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface LogRecord {
  time: string;
  level: string;
  msg: string;
}

function records(output: string): LogRecord[] {
  return output
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const record = JSON.parse(l) as LogRecord;
      assert.deepEqual(Object.keys(record), ['time', 'level', 'msg'], l);
      assert.match(record.time, RFC3339_UTC);
      assert.ok(['debug', 'info', 'warn', 'error'].includes(record.level), l);
      return record;
    });
}

test('standalone --log-format json: every line is a record, its own and its proxies', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['backend-api', 'backend-web']);
  const c = await startStandalone(t, {
    args: ['-f', files, '--log-format', 'json'],
    pool: '127.0.75.0/24',
    stateDir,
  });
  await programmedAddress(c.admin, 'default', 'eg');
  await waitForOutput(c.child, /"msg":"Gateway default\/eg programmed at /);
  await waitForOutput(c.child, /"msg":"\[default\/eg\] /);
  const logged = records(c.child.stdout());
  assert.ok(
    logged.some((r) => r.msg.startsWith('controller gateway.portico.io/gatewayclass-controller: admin API')),
  );
  // A proxy's line keeps its level through the relay.
  assert.ok(logged.some((r) => r.msg.startsWith('[default/eg] ') && r.level === 'info'));
});

test('standalone text lines start with their time, then the level', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['backend-api', 'backend-web']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.76.0/24', stateDir });
  await programmedAddress(c.admin, 'default', 'eg');
  const lines = c.child
    .stdout()
    .split('\n')
    .filter((l) => l !== '');
  assert.ok(lines.length > 2);
  for (const line of lines) {
    const [time, level] = line.split(' ');
    assert.match(time ?? '', RFC3339_UTC, line);
    assert.ok(['debug', 'info', 'warn', 'error'].includes(level ?? ''), line);
  }
});

test('proxy --log-format json writes records to stderr; an unknown format is a usage error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-log-format-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const file = join(dir, 'fleet.json');
  writeFileSync(
    file,
    JSON.stringify(
      fleet(
        [{ listener: listener(port), vhosts: [vhost(port, '*', [route(forward(['default/a:80']))])] }],
        [upstream('default/a:80', [1])],
      ),
    ),
  );
  const common = ['proxy', '--config-file', file, '--bind-address', '127.0.0.1'];
  const off = [
    '--admin-address',
    'off',
    '--metrics-address',
    'off',
    '--ready-address',
    'off',
    '--drain-seconds',
    '0',
  ];
  const child = startPortico([...common, ...off, '--log-format', 'json']);
  t.after(() => {
    child.process.kill('SIGKILL');
  });
  await waitForOutput(child, /"msg":"listening: port-\d+/);
  // Served (its backend is absent: 502), so it has passed its start, signal handlers included.
  assert.equal((await httpRequest(port, '/')).status, 502);
  child.process.kill('SIGTERM');
  assert.equal(await child.exited, 0);
  const logged = records(child.stderr());
  assert.ok(
    logged.some((r) => r.msg === 'drained' || r.msg.includes('drain')),
    child.stderr(),
  );

  const wrong = startPortico([...common, ...off, '--log-format', 'xml']);
  assert.equal(await wrong.exited, 2);
  assert.match(wrong.stderr(), /--log-format: 'xml' is not text or json/);
});

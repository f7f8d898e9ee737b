import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy } from '../../src/proxy/index.js';
import { startPortico, waitForOutput } from '../support/child.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, freePort, httpRequest, startEcho, until } from '../support/http.js';

describe('portico shutdown-manager', () => {
  let echo: { server: Server; port: number };
  before(async () => {
    echo = await startEcho('a');
  });
  after(async () => {
    await closeServer(echo.server);
  });

  it('serves /healthz and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const child = startPortico(['shutdown-manager', '--listen', `127.0.0.1:${port}`]);
    await waitForOutput(child, /listening/);
    assert.equal((await httpRequest(port, '/healthz')).status, 200);
    child.process.kill('SIGTERM');
    assert.equal(await child.exited, 0);
  });

  it('drain: asks the proxy to drain and returns once requests in flight are done', async () => {
    const proxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      adminAddress: '127.0.0.1:0',
      drainMs: 100,
      log: discardingLogger,
    });
    try {
      await proxy.started;
      await proxy.apply(
        simpleFleet(
          [vhost(80, '*', [route(forward(['default/a:80']))])],
          [upstream('default/a:80', [echo.port])],
        ),
      );
      const port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
      const admin = proxy.addresses().find((a) => a.listener === 'admin')!.port;
      const slow = httpRequest(port, '/?delay=1500ms');
      await until(() => proxy.inFlight() === 1);
      const child = startPortico([
        'shutdown-manager',
        'drain',
        '--proxy-admin',
        `127.0.0.1:${admin}`,
        '--timeout-seconds',
        '20',
      ]);
      assert.equal(await child.exited, 0);
      assert.match(child.stderr(), /drain: drained/);
      assert.equal((await slow).status, 200);
      assert.equal(proxy.ready, false);
      assert.equal(proxy.inFlight(), 0);
    } finally {
      await proxy.close();
    }
  });

  it('logs with their time: text by default, --log-format json one record a line, an unreachable proxy a warn', async () => {
    const port = await freePort();
    const text = startPortico(['shutdown-manager', 'drain', '--proxy-admin', `127.0.0.1:${port}`]);
    assert.equal(await text.exited, 0);
    assert.match(text.stderr(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z warn shutdown-manager drain: /m);
    const json = startPortico([
      'shutdown-manager',
      'drain',
      '--proxy-admin',
      `127.0.0.1:${port}`,
      '--log-format',
      'json',
    ]);
    assert.equal(await json.exited, 0);
    const record = JSON.parse(json.stderr().trim()) as { time: string; level: string; msg: string };
    assert.equal(record.level, 'warn');
    assert.match(record.msg, /^shutdown-manager drain: .*unreachable/);
    assert.ok(!Number.isNaN(Date.parse(record.time)));
  });

  it('drain: exits 0 when no proxy answers', async () => {
    const port = await freePort();
    const child = startPortico(['shutdown-manager', 'drain', '--proxy-admin', `127.0.0.1:${port}`]);
    assert.equal(await child.exited, 0);
    assert.match(child.stderr(), /unreachable/);
  });

  it('rejects an unknown subcommand', async () => {
    const child = startPortico(['shutdown-manager', 'explode']);
    // A usage error.
    assert.equal(await child.exited, 2);
    assert.match(child.stderr(), /unexpected argument 'explode'/);
  });
});

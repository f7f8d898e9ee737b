// The proxy admin API refuses what a web page could send (CSRF, DNS rebinding); /live and /ready say whether the
// proxy still serves, so a supervisor or kubelet can restart one that is drained or hung.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, httpRequest, startEcho } from '../support/http.js';

type AdminRequest = { method?: string; host?: string; headers?: Record<string, string> };

describe('proxy admin guard and liveness', () => {
  let echo: { server: Server; port: number };
  let proxy: PorticoProxy;
  const port = (name: string) => proxy.addresses().find((a) => a.listener === name)!.port;
  const admin = (
    path: string,
    options: { method?: string; host?: string; headers?: Record<string, string> },
  ) => httpRequest(port('admin'), path, { host: options.host ?? `127.0.0.1:${port('admin')}`, ...options });

  before(async () => {
    echo = await startEcho('a');
    proxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      adminAddress: '127.0.0.1:0',
      readyAddress: '127.0.0.1:0',
      drainMs: 0,
      log: discardingLogger,
    });
    await proxy.started;
    await proxy.apply(
      simpleFleet(
        [vhost(80, '*', [route(forward(['default/a:80']))])],
        [upstream('default/a:80', [echo.port])],
      ),
    );
  });
  after(async () => {
    await proxy.close();
    await closeServer(echo.server);
  });

  it('refuses a drain a browser could send, and reads naming another host', async () => {
    const refusals: AdminRequest[] = [
      { method: 'POST' }, // a cross-site form post: no custom header
      { method: 'POST', headers: { 'x-portico-admin': 'true', origin: 'https://attacker.example' } },
      {
        method: 'POST',
        headers: { 'x-portico-admin': 'true' },
        host: `rebind.attacker.example:${port('admin')}`,
      },
    ];
    for (const request of refusals) {
      const reply = await admin('/drain', request);
      assert.equal(reply.status, 403, JSON.stringify(request));
    }
    assert.equal(
      (await admin('/config_dump', { host: `rebind.attacker.example:${port('admin')}` })).status,
      403,
    );
    assert.equal(proxy.ready, true, 'still serving');
    assert.equal((await httpRequest(port('port-80'), '/')).status, 200);
    assert.equal((await httpRequest(port('ready'), '/live')).status, 200);
    assert.equal((await httpRequest(port('ready'), '/ready')).status, 200);
  });

  it('a drain with the header is accepted; once drained, /live and /ready fail', async () => {
    const reply = await admin('/drain', { method: 'POST', headers: { 'x-portico-admin': 'true' } });
    assert.equal(reply.status, 202);
    for (let i = 0; i < 200 && (await httpRequest(port('ready'), '/live')).status === 200; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    const live = await httpRequest(port('ready'), '/live');
    assert.equal(live.status, 503);
    assert.match(live.body, /drained/);
    assert.equal((await httpRequest(port('ready'), '/ready')).status, 503);
    assert.equal(JSON.parse((await admin('/stats', {})).body).pid, process.pid);
  });
});

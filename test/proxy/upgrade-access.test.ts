// A WebSocket upgrade meets the same access checks as any request: a route's policy that refuses answers the
// upgrade with its status (no tunnel, nothing sent upstream), logged as access_denied; another route still serves.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import type { FleetPolicy } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy } from '../../src/proxy/index.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { closeServer, httpRequest, startEcho } from '../support/http.js';

function exchange(port: number, data: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      out += c;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(out));
    socket.write(data);
  });
}

test('an upgrade a route policy refuses gets its status, logged access_denied; other routes serve', async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const logged: string[] = [];
  const proxy = createProxy({
    bindAddress: '127.0.0.1',
    portMap: () => 0,
    log: discardingLogger,
    accessLog: {
      format: 'json',
      fields: ['path', 'status', 'response_flags'],
      sampling: 1,
      flushIntervalMs: 1,
      write: (text) => logged.push(text),
    },
  });
  t.after(() => proxy.close());
  await proxy.started;
  const deny: FleetPolicy = {
    name: 'AccessPolicy default/deny',
    kind: 'AccessPolicy',
    rules: [],
    defaultAction: 'Deny',
  };
  const guarded = {
    ...route(forward(['a']), { path: { type: 'PathPrefix' as const, value: '/ws' } }),
    policies: [deny.name],
  };
  const open = route(forward(['a']), { path: { type: 'PathPrefix' as const, value: '/' } });
  const config = fleet(
    [{ listener: listener(80), vhosts: [vhost(80, '*', [guarded, open])] }],
    [upstream('a', [echo.port])],
    [],
    [deny],
  );
  assert.equal((await proxy.apply(config)).ok, true);
  const port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
  const answer = await exchange(
    port,
    'GET /ws HTTP/1.1\r\nhost: ws.test\r\nupgrade: websocket\r\nconnection: Upgrade\r\n' +
      'sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n',
  );
  assert.match(answer, /^HTTP\/1\.1 403 /);
  assert.doesNotMatch(answer, /101 Switching/);
  assert.equal((await httpRequest(port, '/other')).status, 200);
  const until = Date.now() + 5_000;
  while (!logged.join('').includes('access_denied') && Date.now() < until)
    await new Promise((r) => setTimeout(r, 10));
  assert.match(logged.join(''), /"path":"\/ws".*"status":403.*access_denied/);
});

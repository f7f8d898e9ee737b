// Regular-expression matches run in linear time: a pattern that backtracks exponentially in a backtracking engine
// answers at once, and the proxy keeps serving every other host meanwhile.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, httpRequest, startEcho } from '../support/http.js';

test('(a+)+$ against a long header and path answers at once', async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
  t.after(() => proxy.close());
  const evil = '(a+)+$';
  const config = simpleFleet(
    [
      vhost(80, 'evil.example.com', [
        route(forward(['default/a:80']), {
          headers: [{ type: 'RegularExpression', name: 'x-evil', value: evil }],
        }),
        route(forward(['default/a:80']), { path: { type: 'RegularExpression', value: `/${evil}` } }),
      ]),
      vhost(80, 'other.example.com', [route(forward(['default/a:80']))]),
    ],
    [upstream('default/a:80', [echo.port])],
  );
  assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
  const port = proxy.addresses().find((x) => x.listener === 'port-80')!.port;
  // 40 bytes: a backtracking engine would need hours for each of these.
  const input = `${'a'.repeat(40)}!`;
  const started = performance.now();
  const [byHeader, byPath, other] = await Promise.all([
    httpRequest(port, '/', { host: 'evil.example.com', headers: { 'x-evil': input } }),
    httpRequest(port, `/${input}`, { host: 'evil.example.com' }),
    httpRequest(port, '/', { host: 'other.example.com' }),
  ]);
  const elapsed = performance.now() - started;
  assert.equal(byHeader.status, 404, 'no route matches');
  assert.equal(byPath.status, 404);
  assert.equal(other.status, 200);
  assert.ok(elapsed < 1000, `took ${Math.round(elapsed)} ms`);
  const matching = await httpRequest(port, '/', { host: 'evil.example.com', headers: { 'x-evil': 'aaaa' } });
  assert.equal(matching.status, 200, 'the pattern still matches what it should');
});

// A Local rate limit holds for the whole proxy, not per worker: two real worker processes lease their tokens from
// the primary's buckets, so fresh connections spread over both workers are together allowed exactly the limit.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RateLimitRule } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createWorkerProxy } from '../../src/proxy/workers/pool.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { closeServer, freePort, httpRequest, startEcho } from '../support/http.js';
import { parsePrometheus, sampleValue } from '../support/prometheus.js';

test('two workers together allow exactly a Local limit, and the metrics add their decisions up', async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const proxy = createWorkerProxy({
    workers: 2,
    bindAddress: '127.0.0.1',
    metricsAddress: '127.0.0.1:0',
    drainMs: 0,
    log: discardingLogger,
  });
  t.after(() => proxy.close());
  await proxy.started;
  const port = await freePort();
  const rule: RateLimitRule = {
    name: 'default/shared/all',
    keys: [],
    limit: 10,
    periodSeconds: 3600,
    scope: 'Local',
  };
  const config = fleet(
    [
      {
        listener: listener(port),
        vhosts: [vhost(port, '*', [{ ...route(forward(['default/a:80'])), rateLimits: [rule] }])],
      },
    ],
    [upstream('default/a:80', [echo.port])],
  );
  assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });

  const statuses: number[] = [];
  // A new connection per request: the kernel or the primary spreads them over both workers.
  for (let i = 0; i < 30; i++) statuses.push((await httpRequest(port, '/')).status);
  assert.equal(statuses.filter((s) => s === 200).length, 10);
  assert.equal(statuses.filter((s) => s === 429).length, 20);

  const metricsPort = proxy.addresses().find((a) => a.listener === 'metrics')!.port;
  const samples = parsePrometheus((await httpRequest(metricsPort, '/metrics')).body);
  const decisions = (decision: string) =>
    sampleValue(samples, 'portico_rate_limit_decisions_total', {
      policy: 'default/shared',
      rule: 'all',
      decision,
    });
  assert.equal(decisions('allowed'), 10);
  assert.equal(decisions('limited'), 20);
  const perWorker = [0, 1].map((w) =>
    sampleValue(samples, 'portico_proxy_worker_connections_total', { worker: String(w) }),
  );
  assert.ok(
    perWorker.every((n) => (n ?? 0) > 0),
    `both workers took connections: ${perWorker.join(', ')}`,
  );
});

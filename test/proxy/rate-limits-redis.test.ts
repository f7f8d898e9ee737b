// Global rate limits through a real Redis (Debian's redis-server, its own process on a loopback port, with a
// password): two real proxy processes sharing it never allow more than the limit together; with Redis stopped
// under traffic a rule that fails open lets requests through and one that fails closed refuses them, each proxy
// logs the failure once, and both count again once Redis is back. Skips when redis-server is not installed.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RateLimitRule, RedisConnection } from '../../src/ir/fleet-config.js';
import { type Child, startPortico, waitForOutputWithin } from '../support/child.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { closeServer, freePort, httpRequest, startEcho } from '../support/http.js';
import { parsePrometheus, sampleValue } from '../support/prometheus.js';
import { redisMissing, redisServer } from '../support/redis.js';

const missing = redisMissing();

test('two proxies share a Global limit in Redis, and ride out Redis stopped and started', {
  skip: missing,
}, async (t) => {
  const redis = redisServer(await freePort(), 'test-password');
  await redis.start();
  t.after(() => redis.close());
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const connection = (failureMode: 'Open' | 'Closed'): RedisConnection => ({
    address: `127.0.0.1:${redis.port}`,
    password: 'test-password',
    failureMode,
    timeoutMs: 500,
  });
  const rule = (name: string, limit: number, failureMode: 'Open' | 'Closed'): RateLimitRule => ({
    name: `default/global/${name}`,
    keys: [{ type: 'Path' }],
    limit,
    periodSeconds: 3600,
    scope: 'Global',
    redis: connection(failureMode),
  });
  const dir = mkdtempSync(join(tmpdir(), 'portico-global-'));
  const proxies: { child: Child; port: number; metrics: number }[] = [];
  for (const n of [0, 1]) {
    const port = await freePort();
    const metrics = await freePort();
    const at = (path: string, r: RateLimitRule) => ({
      ...route(forward(['default/a:80']), { path: { type: 'PathPrefix' as const, value: path } }),
      rateLimits: [r],
    });
    const config = fleet(
      [
        {
          listener: listener(port),
          vhosts: [
            vhost(port, '*', [
              at('/shared', rule('shared', 40, 'Open')),
              at('/open', rule('open', 100_000, 'Open')),
              at('/closed', rule('closed', 100_000, 'Closed')),
            ]),
          ],
        },
      ],
      [upstream('default/a:80', [echo.port])],
    );
    const file = join(dir, `proxy-${n}.json`);
    writeFileSync(file, JSON.stringify(config));
    const child = startPortico([
      'proxy',
      '--config-file',
      file,
      '--bind-address',
      '127.0.0.1',
      '--workers',
      '1',
      '--admin-address',
      'off',
      '--ready-address',
      'off',
      '--metrics-address',
      `127.0.0.1:${metrics}`,
      '--access-log',
      'off',
    ]);
    t.after(async () => {
      child.process.kill('SIGTERM');
      await child.exited;
    });
    await waitForOutputWithin(child, /listening: port-/);
    proxies.push({ child, port, metrics });
  }
  const get = (n: number, path: string) => httpRequest(proxies[n]!.port, path, { timeoutMs: 5_000 });

  // Alternating between the two proxies: together they allow the limit, never more (a lease is at most what Redis
  // had left), and at most one unspent token short of it (the other proxy's last lease of 2).
  let allowed = 0;
  for (let i = 0; i < 100; i++) if ((await get(i % 2, '/shared')).status === 200) allowed++;
  assert.ok(allowed <= 40 && allowed >= 39, `allowed ${allowed} of a global limit of 40`);

  await redis.stop();
  // Fail open: requests go on; fail closed: 429 (once the leases held before the stop are spent).
  for (let i = 0; i < 20; i++) assert.equal((await get(i % 2, '/open')).status, 200);
  let closed = 0;
  for (let i = 0; i < 20; i++) closed = (await get(i % 2, '/closed')).status;
  assert.equal(closed, 429);

  await redis.start();
  // Back: a Closed rule lets requests through again once its proxy's client reconnected (within seconds).
  const deadline = Date.now() + 15_000;
  const back = [false, false];
  while (!back.every(Boolean) && Date.now() < deadline) {
    for (const n of [0, 1]) if ((await get(n, '/closed')).status === 200) back[n] = true;
  }
  assert.deepEqual(back, [true, true]);

  for (const { child, metrics } of proxies) {
    assert.equal(child.stderr().match(/redis 127\.0\.0\.1:\d+ failed/g)?.length ?? 0, 1, child.stderr());
    assert.equal(child.stderr().match(/answers again/g)?.length ?? 0, 1, child.stderr());
    assert.doesNotMatch(child.stderr() + child.stdout(), /test-password/);
    const samples = parsePrometheus((await httpRequest(metrics, '/metrics')).body);
    const event = (name: string) =>
      sampleValue(samples, 'portico_rate_limit_store_events_total', { scope: 'Global', event: name }) ?? 0;
    assert.ok(event('failed_open') > 0 && event('failed_closed') > 0 && event('failure') > 0);
    // Leases of 2 for the shared rule: fewer round trips than requests.
    assert.ok(event('round_trip') < 100, `round trips: ${event('round_trip')}`);
  }
});

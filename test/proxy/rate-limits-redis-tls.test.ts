// A Global rate limit through a real Redis that speaks TLS only (Debian's redis-server with --tls-port, plain
// port off): the proxy's client verifies the server against the rule's CA and name, and counts there; with a CA
// that did not sign the server's certificate it never talks to it, and a Closed rule refuses (fail closed).
// Skips when redis-server is not installed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateCertificates } from '../../src/certificates/certs.js';
import type { RateLimitRule } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, freePort, httpRequest, startEcho } from '../support/http.js';
import { redisMissing, redisServer } from '../support/redis.js';

test('a Global limit counts in a Redis reached over TLS, and a CA that does not match fails closed', {
  skip: redisMissing(),
}, async (t) => {
  const certs = generateCertificates({ extraSans: ['redis.test'] });
  const other = generateCertificates({ extraSans: ['redis.test'] });
  const redis = redisServer(await freePort(), 'tls-password', {
    certPem: certs.serverCertPem,
    keyPem: certs.serverKeyPem,
  });
  await redis.start();
  t.after(() => redis.close());
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const rule = (name: string, limit: number, caPem: string): RateLimitRule => ({
    name: `default/tls/${name}`,
    keys: [],
    limit,
    periodSeconds: 3600,
    scope: 'Global',
    redis: {
      address: `127.0.0.1:${redis.port}`,
      password: 'tls-password',
      tls: { caPem, serverName: 'redis.test' },
      failureMode: 'Closed',
      timeoutMs: 2_000,
    },
  });
  const at = (path: string, r: RateLimitRule) => ({
    ...route(forward(['a']), { path: { type: 'PathPrefix' as const, value: path } }),
    rateLimits: [r],
  });
  const proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
  t.after(() => proxy.close());
  await proxy.started;
  const config = simpleFleet(
    [
      vhost(80, '*', [
        at('/tls', rule('right-ca', 3, certs.caCertPem)),
        at('/wrong-ca', rule('wrong-ca', 1_000, other.caCertPem)),
      ]),
    ],
    [upstream('a', [echo.port])],
  );
  assert.equal((await proxy.apply(config)).ok, true);
  const port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
  const status = async (path: string) => (await httpRequest(port, path, { timeoutMs: 5_000 })).status;
  const statuses = [];
  for (let i = 0; i < 5; i++) statuses.push(await status('/tls'));
  assert.deepEqual(statuses, [200, 200, 200, 429, 429], 'three allowed in Redis, then refused');
  assert.equal(await status('/wrong-ca'), 429, 'the server is not trusted: the Closed rule refuses');
});

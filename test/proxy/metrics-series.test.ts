// Proxy metrics follow the applied config: series of a deleted route, listener or cluster do not stay forever.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FleetConfig, FleetPolicy } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, freePort, httpRequest, startEcho } from '../support/http.js';
import { parsePrometheus } from '../support/prometheus.js';

/** An echo backend and a proxy with a metrics listener, both closed when the test ends. */
async function started(t: { after(fn: () => unknown): void }) {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const proxy = createProxy({
    bindAddress: '127.0.0.1',
    portMap: () => 0,
    log: discardingLogger,
    metricsAddress: '127.0.0.1:0',
  });
  t.after(() => proxy.close());
  await proxy.started;
  return { echo, proxy };
}

test('series of routes and clusters that left the config are dropped; the others keep counting', async (t) => {
  const { echo, proxy } = await started(t);
  const kept = route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: '/kept' } });
  const deleted = route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: '/deleted' } });
  const broken = route(forward(['default/dead:80']), { path: { type: 'PathPrefix', value: '/dead' } });
  const a = upstream('default/a:80', [echo.port]);
  const dead = upstream('default/dead:80', [await freePort()]);
  assert.equal(
    (await proxy.apply(simpleFleet([vhost(80, 'example.com', [kept, deleted, broken])], [a, dead]))).ok,
    true,
  );
  const port = (name: string) => proxy.addresses().find((x) => x.listener === name)!.port;
  for (const path of ['/kept', '/deleted', '/dead'])
    await httpRequest(port('port-80'), path, { host: 'example.com' });
  const series = async () =>
    parsePrometheus((await httpRequest(port('metrics'), '/metrics')).body)
      .filter((s) => s.name === 'portico_requests_total' || s.name === 'portico_upstream_errors_total')
      .map((s) => `${s.name} ${s.labels.route ?? s.labels.cluster}`)
      .sort();
  assert.deepEqual(
    await series(),
    [
      `portico_requests_total ${broken.name}`,
      `portico_requests_total ${deleted.name}`,
      `portico_requests_total ${kept.name}`,
      'portico_upstream_errors_total default/dead:80',
    ].sort(),
  );

  assert.equal((await proxy.apply(simpleFleet([vhost(80, 'example.com', [kept])], [a]))).ok, true);
  await httpRequest(port('port-80'), '/kept', { host: 'example.com' });
  assert.deepEqual(await series(), [`portico_requests_total ${kept.name}`]);
});

test('rate-limit series of rules no route has any more are dropped; a kept rule keeps counting', async (t) => {
  const { echo, proxy } = await started(t);
  const rule = (name: string) => ({ name, keys: [], limit: 100, periodSeconds: 60, scope: 'Local' as const });
  const limited = (path: string, rules: string[]) => ({
    ...route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: path } }),
    rateLimits: rules.map(rule),
  });
  const a = upstream('default/a:80', [echo.port]);
  const both = [limited('/kept', ['ns/p/kept']), limited('/gone', ['ns/p/gone'])];
  assert.equal((await proxy.apply(simpleFleet([vhost(80, 'example.com', both)], [a]))).ok, true);
  const port = (name: string) => proxy.addresses().find((x) => x.listener === name)!.port;
  for (const path of ['/kept', '/gone']) await httpRequest(port('port-80'), path, { host: 'example.com' });
  const series = async () =>
    parsePrometheus((await httpRequest(port('metrics'), '/metrics')).body)
      .filter((s) => s.name === 'portico_rate_limit_decisions_total')
      .map((s) => `${s.labels.policy}/${s.labels.rule} ${s.labels.decision}`)
      .sort();
  assert.deepEqual(await series(), ['ns/p/gone allowed', 'ns/p/kept allowed']);

  const kept = [limited('/kept', ['ns/p/kept'])];
  assert.equal((await proxy.apply(simpleFleet([vhost(80, 'example.com', kept)], [a]))).ok, true);
  await httpRequest(port('port-80'), '/kept', { host: 'example.com' });
  assert.deepEqual(await series(), ['ns/p/kept allowed']);
});

test('access decision series of policies the config no longer holds are dropped; a kept policy keeps counting', async (t) => {
  const { echo, proxy } = await started(t);
  const policy = (name: string): FleetPolicy => ({
    name: `AccessPolicy default/${name}`,
    kind: 'AccessPolicy',
    rules: [],
    defaultAction: 'Allow',
  });
  const guarded = (path: string, name: string) => ({
    ...route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: path } }),
    policies: [`AccessPolicy default/${name}`],
  });
  const a = upstream('default/a:80', [echo.port]);
  const config = (names: string[]): FleetConfig => ({
    ...simpleFleet(
      [
        vhost(
          80,
          'example.com',
          names.map((n) => guarded(`/${n}`, n)),
        ),
      ],
      [a],
    ),
    policies: names.map(policy),
  });
  assert.equal((await proxy.apply(config(['kept', 'gone']))).ok, true);
  const port = (name: string) => proxy.addresses().find((x) => x.listener === name)!.port;
  for (const path of ['/kept', '/gone'])
    assert.equal((await httpRequest(port('port-80'), path, { host: 'example.com' })).status, 200);
  const series = async () =>
    parsePrometheus((await httpRequest(port('metrics'), '/metrics')).body)
      .filter((s) => s.name === 'portico_proxy_auth_decisions_total')
      .map((s) => `${s.labels.policy} ${s.labels.outcome}`)
      .sort();
  assert.deepEqual(await series(), [
    'AccessPolicy default/gone allowed',
    'AccessPolicy default/kept allowed',
  ]);

  assert.equal((await proxy.apply(config(['kept']))).ok, true);
  await httpRequest(port('port-80'), '/kept', { host: 'example.com' });
  assert.deepEqual(await series(), ['AccessPolicy default/kept allowed']);
});

// Settings changed while a proxy serves (its admin API's PUT /settings): the access log's format and tracing swap
// between requests, workers are added and let go under traffic without a failed request, and what cannot change
// in place (more workers for a proxy serving in its own process) is refused whole. Real proxies, real sockets.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FleetConfig } from '../../src/ir/fleet-config.js';
import type { ProxySettings } from '../../src/ir/proxy-settings.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { runtimeSettings } from '../../src/proxy/live-settings.js';
import { createWorkerProxy } from '../../src/proxy/workers/pool.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { closeServer, freePort, httpRequest, startEcho, until } from '../support/http.js';
import { startOtlpCollector } from '../support/otlp-collector.js';
import { parsePrometheus, sampleValue } from '../support/prometheus.js';
import { traffic } from '../support/traffic.js';

const SETTINGS: ProxySettings = {
  logLevel: 'info',
  accessLog: { format: 'json', fields: ['method', 'path', 'status'] },
  drainSeconds: 0,
  maxDrainSeconds: 10,
  workers: 1,
};

function config(port: number, echoPort: number): FleetConfig {
  const vhosts = [vhost(port, '*', [route(forward(['default/a:80']))])];
  return fleet([{ listener: listener(port), vhosts }], [upstream('default/a:80', [echoPort])]);
}

const sidePort = (proxy: PorticoProxy, name: string) =>
  proxy.addresses().find((a) => a.listener === name)!.port;

/** PUT /settings on the proxy's admin API, as the host supervisor sends it; a string body goes as it is. */
function putSettings(
  proxy: PorticoProxy,
  body: unknown,
  headers: Record<string, string> = { 'x-portico-admin': 'true' },
) {
  const port = sidePort(proxy, 'admin');
  return httpRequest(port, '/settings', {
    method: 'PUT',
    host: `127.0.0.1:${port}`,
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    timeoutMs: 30_000,
  });
}

test('in process: the access log changes format between requests, tracing starts, more workers are refused', async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const collector = await startOtlpCollector();
  t.after(() => collector.close());
  const lines: string[] = [];
  const port = await freePort();
  const proxy = createProxy({
    bindAddress: '127.0.0.1',
    adminAddress: '127.0.0.1:0',
    log: discardingLogger,
    accessLog: {
      ...runtimeSettings(SETTINGS).accessLog!,
      flushIntervalMs: 10,
      write: (text) => lines.push(...text.trimEnd().split('\n')),
    },
  });
  t.after(() => proxy.close());
  await proxy.started;
  assert.equal((await proxy.apply(config(port, echo.port))).ok, true);
  assert.equal((await httpRequest(port, '/before')).status, 200);
  await until(() => lines.length === 1);
  assert.deepEqual(JSON.parse(lines[0]!), { method: 'GET', path: '/before', status: 200 });

  const changed: ProxySettings = {
    ...SETTINGS,
    accessLog: { format: 'text', fields: ['path', 'status'] },
    tracing: { endpoint: collector.endpoint },
  };
  const reply = await putSettings(proxy, changed);
  assert.equal(reply.status, 200, reply.body);
  assert.equal((await httpRequest(port, '/after')).status, 200);
  await until(() => lines.length === 2);
  assert.equal(lines[1], 'path=/after status=200', 'the same writer, the new format');
  await until(() => collector.spans.length === 1);
  assert.equal(collector.spans[0]?.name, 'GET');

  const refused = await putSettings(proxy, { ...changed, workers: 2 });
  assert.equal(refused.status, 409);
  assert.match(JSON.parse(refused.body).error, /serves in its own process.*2 workers need a restart/);
  const off = await putSettings(proxy, { ...changed, accessLog: { format: 'off' } });
  assert.equal(off.status, 200);
  assert.equal((await httpRequest(port, '/unlogged')).status, 200);
  await until(() => collector.spans.length === 2);
  assert.equal(lines.length, 2, 'no line once the log is off');
});

test('the admin API takes settings only with its header, and names a field it refuses', async (t) => {
  const proxy = createProxy({
    bindAddress: '127.0.0.1',
    adminAddress: '127.0.0.1:0',
    log: discardingLogger,
    maxWorkers: 4,
  });
  t.after(() => proxy.close());
  await proxy.started;
  assert.equal((await putSettings(proxy, SETTINGS, {})).status, 403);
  const cases: [unknown, RegExp][] = [
    [{ ...SETTINGS, workers: 0 }, /^workers: expected a number from 1/],
    // Its supervisor's cap, not the 1,024 a DataPlaneProxy may ask for.
    [{ ...SETTINGS, workers: 5 }, /^workers: expected at most 4 \(this proxy's --max-workers\)/],
    [
      { ...SETTINGS, accessLog: { format: 'json', fields: ['method', 'cookie'] } },
      /^accessLog\.fields\[1\]: unknown/,
    ],
    [{ ...SETTINGS, tracing: { endpoint: 'ftp://collector' } }, /^tracing\.endpoint: expected an http/],
    [{ ...SETTINGS, colour: 'blue' }, /^colour: unknown field/],
    ['[', /^not JSON/],
  ];
  for (const [body, error] of cases) {
    const reply = await putSettings(proxy, body);
    assert.equal(reply.status, 400, reply.body);
    assert.match(JSON.parse(reply.body).error, error);
  }
});

test('GET /settings shows what PUT /settings took last (null while the proxy runs on its flags)', async (t) => {
  const proxy = createProxy({ bindAddress: '127.0.0.1', adminAddress: '127.0.0.1:0', log: discardingLogger });
  t.after(() => proxy.close());
  await proxy.started;
  const port = sidePort(proxy, 'admin');
  const shown = async () =>
    JSON.parse((await httpRequest(port, '/settings', { host: `127.0.0.1:${port}` })).body) as unknown;
  assert.equal(await shown(), null);
  const taken = { ...SETTINGS, accessLog: { format: 'off' as const } };
  assert.equal((await putSettings(proxy, taken)).status, 200);
  assert.deepEqual(await shown(), taken);
  // A refused change is not shown as taken.
  assert.equal((await putSettings(proxy, { ...SETTINGS, workers: 2 })).status, 409);
  assert.deepEqual(await shown(), taken);
});

test('with workers: added and let go under traffic, no request fails, every request counted', async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const collector = await startOtlpCollector();
  t.after(() => collector.close());
  const port = await freePort();
  const proxy = createWorkerProxy({
    workers: 2,
    bindAddress: '127.0.0.1',
    adminAddress: '127.0.0.1:0',
    metricsAddress: '127.0.0.1:0',
    drainMs: 0,
    log: discardingLogger,
  });
  t.after(() => proxy.close());
  await proxy.started;
  assert.equal((await proxy.apply(config(port, echo.port))).ok, true);
  const metrics = async () =>
    parsePrometheus((await httpRequest(sidePort(proxy, 'metrics'), '/metrics')).body);

  const load = traffic(6, (agent) => httpRequest(port, '/', { agent, timeoutMs: 10_000 }));
  await until(() => load.sent > 50);
  const grow = await putSettings(proxy, {
    ...SETTINGS,
    accessLog: { format: 'off' },
    tracing: { endpoint: collector.endpoint },
    workers: 3,
  });
  assert.equal(grow.status, 200, grow.body);
  assert.equal(sampleValue(await metrics(), 'portico_proxy_workers'), 3, 'the new worker serves the config');
  const atThree = load.sent;
  await until(() => load.sent > atThree + 100);
  const shrink = await putSettings(proxy, {
    ...SETTINGS,
    accessLog: { format: 'off' },
    tracing: { endpoint: collector.endpoint },
    workers: 1,
  });
  assert.equal(shrink.status, 200, shrink.body);
  const atOne = load.sent;
  await until(() => load.sent > atOne + 100);
  const { sent, failures } = await load.stop();
  assert.deepEqual(failures, [], `${failures.length} of ${sent} failed`);

  // Every request started after the workers took tracing was traced, the new worker's too (at most the 7
  // in flight at that moment may have started before).
  await eventually(async () => collector.spans.length >= sent - atThree - 7, 'the spans exported');
  const samples = await metrics();
  assert.equal(sampleValue(samples, 'portico_proxy_workers'), 1);
  assert.equal(sampleValue(samples, 'portico_proxy_worker_restarts_total'), 0, 'letting go is not a crash');
  // The workers let go count once they exit, with their counts at that moment.
  await eventually(async () => {
    const counted = (await metrics())
      .filter((s) => s.name === 'portico_requests_total')
      .reduce((n, s) => n + s.value, 0);
    return counted === sent;
  }, `requests counted equal to the ${sent} sent, the workers let go included`);
});

async function eventually(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

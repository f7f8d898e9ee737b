// A proxy with several worker processes is one proxy to the outside: a config is applied by every worker
// before apply resolves, a dead worker is replaced without touching the others' connections, a drain waits for
// every worker's requests, and the metrics add the workers up. Real worker processes (node:cluster), real
// sockets; the accept balancing is the best the running Node has (round robin on 20, SO_REUSEPORT on the
// image's 26).
import assert from 'node:assert/strict';
import cluster from 'node:cluster';
import { once } from 'node:events';
import { Agent } from 'node:http';
import { type AddressInfo, createServer as createNetServer, connect as netConnect } from 'node:net';
import { test } from 'node:test';
import type { FleetConfig } from '../../src/ir/fleet-config.js';
import { createLogger, discardingLogger, type Logger } from '../../src/platform/log-line.js';
import type { Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { bestAcceptBalancing, createWorkerProxy } from '../../src/proxy/workers/pool.js';
import { workerExecArgv } from '../../src/proxy/workers/worker-slot.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { h2Request, h2Session } from '../support/h2.js';
import { closeServer, freePort, httpRequest, startEcho, until } from '../support/http.js';
import { startOtlpCollector } from '../support/otlp-collector.js';
import { parsePrometheus, sampleValue } from '../support/prometheus.js';

const WORKERS = 2;

function config(port: number, echoPort: number, paths: string[]): FleetConfig {
  const routes = paths.map((p) =>
    route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: p } }),
  );
  const vhosts = [vhost(port, '*', routes)];
  return fleet([{ listener: listener(port), vhosts }], [upstream('default/a:80', [echoPort])]);
}

async function startPool(
  t: { after: (fn: () => Promise<void>) => void },
  workers = WORKERS,
  log: Logger = discardingLogger,
) {
  const proxy = createWorkerProxy({
    workers,
    bindAddress: '127.0.0.1',
    metricsAddress: '127.0.0.1:0',
    readyAddress: '127.0.0.1:0',
    adminAddress: '127.0.0.1:0',
    drainMs: 0,
    log,
  });
  t.after(() => proxy.close());
  await proxy.started;
  return proxy;
}

function sidePort(proxy: PorticoProxy, name: string): number {
  return proxy.addresses().find((a) => a.listener === name)!.port;
}

async function metrics(proxy: PorticoProxy) {
  return parsePrometheus((await httpRequest(sidePort(proxy, 'metrics'), '/metrics')).body);
}

async function acceptedByWorker(proxy: PorticoProxy): Promise<number[]> {
  const samples = await metrics(proxy);
  return Array.from(
    { length: WORKERS },
    (_, i) => sampleValue(samples, 'portico_proxy_worker_connections_total', { worker: String(i) }) ?? -1,
  );
}

/** A request on a new connection each: connections go to every worker. */
const fresh = (port: number, path: string) => httpRequest(port, path, { timeoutMs: 10_000 });

test(`apply resolves once all ${WORKERS} workers applied: every worker serves the new route at once`, async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const port = await freePort();
  const proxy = await startPool(t);
  assert.equal((await proxy.apply(config(port, echo.port, ['/old']), 'v1')).ok, true);
  assert.equal((await fresh(port, '/new')).status, 404);
  const before = await acceptedByWorker(proxy);
  assert.equal((await proxy.apply(config(port, echo.port, ['/old', '/new']), 'v2')).ok, true);
  // No wait: the first request after apply resolved, on whichever worker, already routes by v2.
  const statuses: number[] = [];
  for (let i = 0; i < 8 * WORKERS; i++) statuses.push((await fresh(port, '/new')).status);
  assert.deepEqual(
    statuses,
    statuses.map(() => 200),
  );
  const after = await acceptedByWorker(proxy);
  for (const [i, n] of after.entries()) {
    assert.ok(n > (before[i] ?? 0), `worker ${i} served some of them (${before} → ${after})`);
  }
});

test('metrics are the sum over workers: requests counted equal requests sent; connections spread', async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const port = await freePort();
  const proxy = await startPool(t);
  assert.equal((await proxy.apply(config(port, echo.port, ['/']), 'v1')).ok, true);
  const sent = 40;
  await Promise.all(Array.from({ length: sent }, () => fresh(port, '/')));
  const samples = await metrics(proxy);
  const total = samples
    .filter((s) => s.name === 'portico_requests_total' && s.labels.code === '200')
    .reduce((n, s) => n + s.value, 0);
  assert.equal(total, sent);
  const count = samples
    .filter((s) => s.name === 'portico_request_duration_seconds_count')
    .reduce((n, s) => n + s.value, 0);
  assert.equal(count, sent);
  const accepted = await acceptedByWorker(proxy);
  assert.equal(
    accepted.reduce((a, b) => a + b, 0),
    sent,
  );
  // Round robin hands a connection to the next idle worker; the kernel's SO_REUSEPORT hash spreads them only roughly.
  const fewest = bestAcceptBalancing() === 'round-robin' ? sent / (2 * WORKERS) : 1;
  for (const n of accepted) assert.ok(n >= fewest, `spread ${accepted}`);
  assert.equal(sampleValue(samples, 'portico_proxy_workers'), WORKERS);
});

test('a worker killed under traffic: only its own connections fail, the rest all succeed, it comes back', async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const port = await freePort();
  const proxy = await startPool(t);
  assert.equal((await proxy.apply(config(port, echo.port, ['/']), 'v1')).ok, true);
  // Keep-alive lanes: one connection each, requests back to back until the test stops them.
  const lanes: Agent[] = [];
  t.after(() => {
    for (const agent of lanes) agent.destroy();
  });
  // The kernel's SO_REUSEPORT hash may put several connections in a row on one worker: open lanes until the
  // first worker holds some (bounded: 64 landing on one of two workers would be a broken spread).
  while (lanes.length < 4 * WORKERS || ((await acceptedByWorker(proxy))[0] ?? 0) === 0) {
    assert.ok(lanes.length < 64, `the first worker holds no lane of ${lanes.length}`);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    lanes.push(agent);
    assert.equal((await httpRequest(port, '/', { agent })).status, 200);
  }
  let running = true;
  const outcomes = lanes.map(async (agent) => {
    let ok = 0;
    while (running) {
      try {
        const reply = await httpRequest(port, '/', { agent, timeoutMs: 5_000 });
        if (reply.status !== 200) return { ok, failed: `status ${reply.status}` };
        ok++;
      } catch (error) {
        return { ok, failed: (error as Error).message };
      }
    }
    return { ok, failed: undefined };
  });
  await new Promise((r) => setTimeout(r, 200));
  // Every connection the first worker ever accepted, read just before it dies: a lane the client reopened
  // (a loaded machine) may have landed there since the warm-up, so no earlier count bounds what fails.
  const [onVictim = 0] = await acceptedByWorker(proxy);
  const victim = Object.values(cluster.workers ?? {})[0];
  assert.ok(victim !== undefined);
  victim.process.kill('SIGKILL');
  await new Promise((r) => setTimeout(r, 500));
  // New connections meanwhile all succeed: the dead worker gets none.
  for (let i = 0; i < 4 * WORKERS; i++) assert.equal((await fresh(port, '/')).status, 200);
  running = false;
  const results = await Promise.all(outcomes);
  const failed = results.filter((r) => r.failed !== undefined);
  // Only the victim's lanes fail: at least one, never more than it held.
  const report = `lanes that failed: ${JSON.stringify(results)}; the victim accepted ${onVictim}`;
  assert.ok(failed.length >= 1 && failed.length <= onVictim, report);
  for (const r of results.filter((x) => x.failed === undefined)) assert.ok(r.ok > 0);
  // The replacement starts and receives the config: the pool is whole again.
  for (;;) {
    const samples = await metrics(proxy);
    if (
      sampleValue(samples, 'portico_proxy_workers') === WORKERS &&
      sampleValue(samples, 'portico_proxy_worker_restarts_total') === 1
    )
      break;
    await new Promise((r) => setTimeout(r, 50));
  }
  // 16 connections: the chance that SO_REUSEPORT's hash sends them all to one worker is 2 in 65,536.
  for (let i = 0; i < 8 * WORKERS; i++) assert.equal((await fresh(port, '/')).status, 200);
  const accepted = await acceptedByWorker(proxy);
  assert.ok(
    accepted.every((n) => n > 0),
    `the replacement accepts connections too: ${accepted}`,
  );
});

test('drain: every worker stops accepting and finishes its requests in flight, and says so through the primary', async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const port = await freePort();
  const lines: string[] = [];
  const proxy = await startPool(
    t,
    WORKERS,
    createLogger('info', (line) => lines.push(line)),
  );
  assert.equal((await proxy.apply(config(port, echo.port, ['/']), 'v1')).ok, true);
  const slow = Array.from({ length: 4 * WORKERS }, () => fresh(port, '/?delay=700ms'));
  await new Promise((r) => setTimeout(r, 200));
  const accepted = await acceptedByWorker(proxy);
  assert.ok(
    accepted.every((n) => n > 0),
    `requests in flight on every worker: ${accepted}`,
  );
  const readyPort = sidePort(proxy, 'ready');
  const drained = proxy.drain({ drainMs: 0, maxMs: 10_000 });
  assert.equal((await httpRequest(readyPort, '/ready')).status, 503);
  // The workers answer for their requests in flight while they drain (the pod's shutdown-manager polls this).
  const adminPort = sidePort(proxy, 'admin');
  const stats = await httpRequest(adminPort, '/stats', { host: `127.0.0.1:${adminPort}`, timeoutMs: 1_000 });
  assert.deepEqual(
    (({ inFlight, draining, drained }) => ({ inFlight, draining, drained }))(JSON.parse(stats.body)),
    { inFlight: 4 * WORKERS, draining: true, drained: false },
  );
  const replies = await Promise.all(slow);
  assert.deepEqual(
    replies.map((r) => r.status),
    replies.map(() => 200),
  );
  await drained;
  await assert.rejects(httpRequest(port, '/', { timeoutMs: 2_000 }), /ECONNREFUSED/);
  assert.deepEqual(Object.keys(cluster.workers ?? {}), []);
  // A worker's lines reach the primary's logger, which gives them their level and names the worker.
  assert.equal(lines.filter((l) => /^info worker \d+: drained$/.test(l)).length, WORKERS, lines.join('\n'));
  assert.equal(lines.at(-1), 'info drained');
});

test('a worker that dies while applying makes apply fail, naming the worker (the proxy Nacks)', async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const port = await freePort();
  const proxy = await startPool(t);
  assert.equal((await proxy.apply(config(port, echo.port, ['/']), 'v1')).ok, true);
  const victim = Object.values(cluster.workers ?? {})[0]!;
  victim.process.kill('SIGSTOP');
  const outcome = proxy.apply(config(port, echo.port, ['/', '/next']), 'v2');
  await new Promise((r) => setTimeout(r, 200));
  victim.process.kill('SIGKILL');
  const result = await outcome;
  assert.equal(result.ok, false);
  assert.match(result.ok ? '' : result.error, new RegExp(`^worker ${victim.id}: worker ${victim.id} exited`));
  // The next config reaches every worker, the replacement included.
  for (;;) {
    const samples = await metrics(proxy);
    if (sampleValue(samples, 'portico_proxy_workers') === WORKERS) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal((await proxy.apply(config(port, echo.port, ['/', '/next', '/third']), 'v3')).ok, true);
  for (let i = 0; i < 4 * WORKERS; i++) assert.equal((await fresh(port, '/third')).status, 200);
});

test("workers get the primary's Node options but not a script it was given with -e or -p", () => {
  assert.deepEqual(
    workerExecArgv(['--import', 'tsx', '--input-type=module', '-e', 'run()', '--max-old-space-size=512']),
    ['--import', 'tsx', '--max-old-space-size=512'],
  );
  assert.deepEqual(workerExecArgv(['--eval=run()', '-p', '1', '--print=2', '--enable-source-maps']), [
    '--enable-source-maps',
  ]);
});

test('every worker tells h2c from HTTP/1.1 on its own and serves both, with the primary HTTP/2 limits', async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const port = await freePort();
  const proxy = createWorkerProxy({
    workers: WORKERS,
    bindAddress: '127.0.0.1',
    metricsAddress: '127.0.0.1:0',
    drainMs: 0,
    log: discardingLogger,
    http2: { maxConcurrentStreams: 7 },
  });
  t.after(() => proxy.close());
  await proxy.started;
  assert.equal((await proxy.apply(config(port, echo.port, ['/']), 'v1')).ok, true);
  for (let i = 0; i < 4 * WORKERS; i++) {
    const session = await h2Session(`http://127.0.0.1:${port}`);
    try {
      assert.equal((await h2Request(session, '/h2')).status, 200);
      // Read after a response: the proxy's SETTINGS came first.
      assert.equal(session.remoteSettings.maxConcurrentStreams, 7);
    } finally {
      session.close();
    }
    assert.equal((await fresh(port, '/h1')).status, 200);
  }
  const accepted = await acceptedByWorker(proxy);
  for (const n of accepted) assert.ok(n > 0, `every worker took connections: ${accepted}`);
});

test(`tracing with ${WORKERS} workers: every worker exports its requests' spans, the metrics add them up`, async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const collector = await startOtlpCollector();
  t.after(() => collector.close());
  const proxy = createWorkerProxy({
    workers: WORKERS,
    bindAddress: '127.0.0.1',
    metricsAddress: '127.0.0.1:0',
    readyAddress: '127.0.0.1:0',
    adminAddress: '127.0.0.1:0',
    drainMs: 0,
    log: discardingLogger,
    tracing: { endpoint: collector.endpoint, sampling: 1, flushIntervalMs: 20 },
  });
  t.after(() => proxy.close());
  await proxy.started;
  const port = await freePort();
  assert.equal((await proxy.apply(config(port, echo.port, ['/']), 'v1')).ok, true);
  const requests = 8 * WORKERS;
  for (let i = 0; i < requests; i++) assert.equal((await fresh(port, `/traced/${i}`)).status, 200);
  await until(() => collector.spans.length === requests);
  assert.equal(
    new Set(collector.spans.map((s) => s.traceId)).size,
    requests,
    'one trace per request, none twice',
  );
  const accepted = await acceptedByWorker(proxy);
  assert.ok(
    accepted.every((n) => n > 0),
    `both workers served (and so exported): ${accepted}`,
  );
  // The primary asks its workers for their counts on each scrape: the sum reaches every span exported.
  let exported = 0;
  while (exported !== requests) {
    exported = sampleValue(await metrics(proxy), 'portico_tracing_spans_total', { outcome: 'exported' }) ?? 0;
    if (exported !== requests) await new Promise((resolve) => setTimeout(resolve, 20));
  }
});

test(`every one of ${WORKERS} workers serves a TCP listener, on the relay of its process`, async (t) => {
  const echo = createNetServer((socket) => socket.pipe(socket));
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  t.after(() => new Promise<void>((resolve) => echo.close(() => resolve())));
  const echoPort = (echo.address() as AddressInfo).port;
  const port = await freePort();
  const proxy = await startPool(t);
  const tcp = fleet(
    [
      {
        listener: {
          name: `port-${port}`,
          port,
          protocol: 'TCP',
          gatewayListeners: [{ gateway: 'default/eg', listener: 'tcp' }],
        },
        vhosts: [vhost(port, '*', [route(forward(['echo']))])],
      },
    ],
    [
      {
        cluster: {
          name: 'echo',
          service: { namespace: 'default', name: 'echo', port: echoPort },
          protocol: 'tcp',
        },
        endpoints: { name: 'echo', endpoints: [{ address: '127.0.0.1', port: echoPort }] },
      },
    ],
  );
  assert.equal((await proxy.apply(tcp, 'v1')).ok, true);
  const sent = 40;
  const echoed = await Promise.all(
    Array.from({ length: sent }, async (_, i) => {
      const socket = netConnect({ host: '127.0.0.1', port });
      socket.setEncoding('utf8');
      socket.end(`connection ${i}`);
      let got = '';
      for await (const chunk of socket) got += chunk as string;
      return got === `connection ${i}`;
    }),
  );
  assert.equal(echoed.filter((ok) => !ok).length, 0);
  const accepted = await acceptedByWorker(proxy);
  assert.equal(
    accepted.reduce((a, b) => a + b, 0),
    sent,
  );
  for (const n of accepted) assert.ok(n >= 1, `spread ${accepted}`);
});

// A route's retry policy (HTTPRoute `retry`): the statuses it names and failures with no answer are sent again,
// after a backoff, within the route timeout, and never more often than its attempts; a body is sent again whole.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { ACCESS_LOG_FIELDS } from '../../src/ir/access-log.js';
import type { RetryPolicy } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, freePort, httpRequest, listen, within } from '../support/http.js';
import { parsePrometheus } from '../support/prometheus.js';

/** Per key (`?key=`), how many requests the flaky backend saw, and the bodies it read. */
const seen = new Map<string, { count: number; bodies: string[] }>();

/** Answers `?status=` to the first `?fail=` requests of each `?key=`, then 200 with the body it read. */
const flaky = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://backend');
  const key = url.searchParams.get('key') ?? '';
  const record = seen.get(key) ?? { count: 0, bodies: [] };
  seen.set(key, record);
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => {
    body += c;
  });
  req.on('end', () => {
    record.count++;
    record.bodies.push(body);
    // `?slow=N`: the first N requests of the key get no answer until the proxy gives up on them.
    if (record.count <= Number(url.searchParams.get('slow') ?? 0)) return;
    if (record.count <= Number(url.searchParams.get('fail') ?? 0)) {
      res.writeHead(Number(url.searchParams.get('status') ?? 500)).end('failed');
      return;
    }
    res.end(`ok ${body}`);
  });
});

/** Answers 503 to everything: beside a good endpoint, every request it gets first must be retried on the other. */
const failing = createServer((_req, res) => {
  res.writeHead(503).end('down');
});

let proxy: PorticoProxy;
let port: number;
let metricsPort: number;
/** The access log's lines, as the proxy writes them (JSON, every field, every request). */
let logged = '';

function policy(p: Partial<RetryPolicy>): RetryPolicy {
  return { codes: [500, 502, 503, 504], attempts: 2, backoffMs: 1, ...p };
}

before(async () => {
  const flakyPort = await listen(flaky);
  // An endpoint that refuses connections beside one that answers: a retry picks an endpoint afresh.
  const refusing = await freePort();
  const failingPort = await listen(failing);
  proxy = createProxy({
    bindAddress: '127.0.0.1',
    portMap: () => 0,
    log: discardingLogger,
    metricsAddress: '127.0.0.1:0',
    loadBalancing: 'round-robin',
    accessLog: {
      format: 'json',
      fields: ACCESS_LOG_FIELDS,
      sampling: 1,
      flushIntervalMs: 1,
      write: (text) => {
        logged += text;
      },
    },
  });
  await proxy.started;
  const prefix = (value: string) => ({ path: { type: 'PathPrefix' as const, value } });
  const routes = [
    route(
      forward(['flaky'], { retry: policy({ codes: [500], attempts: 3 }) }),
      prefix('/code-500-attempts-3'),
    ),
    route(forward(['flaky'], { retry: policy({}) }), prefix('/all-attempts-2')),
    route(forward(['flaky'], { retry: policy({ attempts: 0 }) }), prefix('/all-attempts-0')),
    route(forward(['flaky']), prefix('/no-policy')),
    route(
      forward(['flaky'], { timeoutMs: 300, retry: policy({ attempts: 50, backoffMs: 100 }) }),
      prefix('/bounded-by-timeout'),
    ),
    route(
      forward(['flaky'], { backendTimeoutMs: 1000, retry: policy({ codes: [], attempts: 2 }) }),
      prefix('/backend-timeout'),
    ),
    route(forward(['flaky'], { backendTimeoutMs: 1000 }), prefix('/backend-timeout-no-policy')),
    route(forward(['half-refusing'], { retry: policy({ codes: [], attempts: 5 }) }), prefix('/connection')),
    route(forward(['half-refusing']), prefix('/connection-no-policy')),
    route(
      forward(['half-failing'], { retry: policy({ codes: [503], attempts: 1, backoffMs: 0 }) }),
      prefix('/another-endpoint'),
    ),
  ];
  const fleetConfig = simpleFleet(
    [vhost(80, 'example.com', routes)],
    [
      upstream('flaky', [flakyPort]),
      upstream('half-refusing', [refusing, flakyPort]),
      upstream('half-failing', [failingPort, flakyPort]),
    ],
  );
  assert.equal((await proxy.apply(fleetConfig)).ok, true);
  const address = (name: string) => proxy.addresses().find((a) => a.listener === name)!.port;
  port = address('port-80');
  metricsPort = address('metrics');
});

after(async () => {
  await proxy.close();
  await closeServer(flaky);
  await closeServer(failing);
});

let keys = 0;
async function send(path: string, query: string, body?: string) {
  const key = `k${keys++}`;
  const reply = await httpRequest(port, `${path}?key=${key}&${query}`, {
    host: 'example.com',
    timeoutMs: 5000,
    ...(body === undefined ? {} : { method: 'POST', body }),
  });
  return { reply, tries: seen.get(key)?.count ?? 0, bodies: seen.get(key)?.bodies ?? [] };
}

describe('proxy: retries of a route retry policy', () => {
  it('retries a listed status until it succeeds within its attempts', async () => {
    const { reply, tries } = await send('/code-500-attempts-3', 'fail=2&status=500');
    assert.equal(reply.status, 200);
    assert.equal(tries, 3);
  });

  it('answers the last failure once its attempts are spent', async () => {
    const { reply, tries } = await send('/code-500-attempts-3', 'fail=4&status=500');
    assert.equal(reply.status, 500);
    assert.equal(tries, 4, 'the first attempt and three retries');
  });

  it('does not retry a status the policy does not list', async () => {
    const { reply, tries } = await send('/code-500-attempts-3', 'fail=2&status=503');
    assert.equal(reply.status, 503);
    assert.equal(tries, 1);
  });

  for (const status of [500, 502, 503, 504]) {
    it(`retries ${status} when listed, up to two attempts`, async () => {
      const ok = await send('/all-attempts-2', `fail=2&status=${status}`);
      assert.equal(ok.reply.status, 200);
      const spent = await send('/all-attempts-2', `fail=3&status=${status}`);
      assert.equal(spent.reply.status, status);
      assert.equal(spent.tries, 3);
    });
  }

  it('never retries with attempts 0, nor without a policy', async () => {
    for (const path of ['/all-attempts-0', '/no-policy']) {
      const { reply, tries } = await send(path, 'fail=1&status=500');
      assert.equal(reply.status, 500, path);
      assert.equal(tries, 1, path);
    }
  });

  it('sends a request body again, whole, on each retry', async () => {
    const { reply, bodies } = await send('/all-attempts-2', 'fail=2&status=502', 'the same body');
    assert.equal(reply.status, 200);
    assert.equal(reply.body, 'ok the same body');
    assert.deepEqual(bodies, ['the same body', 'the same body', 'the same body']);
  });

  it('gives up with 504 when the route timeout passes during its retries', async () => {
    const { reply, tries } = await send('/bounded-by-timeout', 'fail=1000&status=500');
    assert.equal(reply.status, 504);
    assert.ok(tries >= 1 && tries < 50, `${tries} tries within a 300 ms route timeout`);
  });

  it('retries an attempt that reaches the backend request timeout, and answers 504 once none is left', async () => {
    const recovered = await send('/backend-timeout', 'slow=1');
    assert.equal(recovered.reply.status, 200);
    assert.equal(recovered.tries, 2);
    const spent = await send('/backend-timeout', 'slow=3');
    assert.equal(spent.reply.status, 504);
    assert.equal(spent.tries, 3, 'the first attempt and two retries');
    const alone = await send('/backend-timeout-no-policy', 'slow=1');
    assert.equal(alone.reply.status, 504);
    assert.equal(alone.tries, 1);
  });

  it('retries a refused connection on another endpoint (RetryConnectionError)', async () => {
    // Round robin over [refusing, answering]: every request that starts on the refusing one is retried.
    for (let i = 0; i < 4; i++) {
      const { reply } = await send('/connection', 'fail=0');
      assert.equal(reply.status, 200, `request ${i}`);
    }
    // Without a policy the same endpoints fail every other request: the retry is what made the difference.
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await send('/connection-no-policy', 'fail=0')).reply.status);
    assert.ok(statuses.includes(502), `without a policy: ${statuses.join(', ')}`);
  });

  it('sends a retry to another endpoint than the one that failed, even with requests interleaved', async () => {
    // 40 at once over [failing, answering] with one retry each: the round-robin counter moves between a
    // request's first attempt and its retry, so only a pick that avoids the failed endpoint makes all 40 pass.
    const replies = await Promise.all(Array.from({ length: 40 }, () => send('/another-endpoint', 'fail=0')));
    const statuses = replies.map((r) => r.reply.status);
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
      `statuses: ${statuses.join(', ')}`,
    );
  });

  it('logs how many times each request was sent again', async () => {
    const { reply } = await send('/all-attempts-2', 'fail=2&status=503&log=me');
    assert.equal(reply.status, 200);
    const lineOf = () =>
      logged
        .split('\n')
        .filter((l) => l.includes('log=me'))
        .map((l) => JSON.parse(l) as { upstream_retries?: number; status: number })[0];
    await within(
      5000,
      () => lineOf() !== undefined,
      () => `no access log line yet: ${logged.slice(-300)}`,
    );
    assert.equal(lineOf()!.upstream_retries, 2);
    assert.equal(lineOf()!.status, 200);
  });

  it('counts retries per cluster', async () => {
    const samples = parsePrometheus((await httpRequest(metricsPort, '/metrics')).body).filter(
      (s) => s.name === 'portico_upstream_retries_total',
    );
    const byCluster = new Map(samples.map((s) => [s.labels.cluster, s.value]));
    assert.ok((byCluster.get('flaky') ?? 0) >= 10, `flaky: ${byCluster.get('flaky')}`);
    assert.ok((byCluster.get('half-refusing') ?? 0) >= 2, `half-refusing: ${byCluster.get('half-refusing')}`);
  });
});

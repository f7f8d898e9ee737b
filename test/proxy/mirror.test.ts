// RequestMirror through the real proxy: a copy of each forwarded request (or of a share of them) reaches the
// mirror's backend with the route's filters and the body, while the client's answer is the main backend's alone;
// a mirror that hangs, refuses or cannot get the body never holds up or changes the request it copies.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { RequestMirror } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, freePort, httpRequest, listen, until } from '../support/http.js';
import { parsePrometheus } from '../support/prometheus.js';

interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A backend that records what it read and answers `name`; `hang` never answers. */
function recorder(name: string, hang = false) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      if (!hang) res.end(`${name} read ${body.length}`);
    });
  });
  return { seen, server };
}

const main = recorder('main');
const shadow = recorder('shadow');
const second = recorder('second');
const sampled = recorder('sampled');
const hanging = recorder('hanging', true);

let proxy: PorticoProxy;
let port: number;
let metricsPort: number;

const all = (cluster: string): RequestMirror => ({ cluster, fraction: 1 });

before(async () => {
  const ports = await Promise.all([main, shadow, second, sampled, hanging].map((r) => listen(r.server)));
  const [mainPort, shadowPort, secondPort, sampledPort, hangingPort] = ports as [
    number,
    number,
    number,
    number,
    number,
  ];
  proxy = createProxy({
    bindAddress: '127.0.0.1',
    portMap: () => 0,
    log: discardingLogger,
    metricsAddress: '127.0.0.1:0',
  });
  await proxy.started;
  const prefix = (value: string) => ({ path: { type: 'PathPrefix' as const, value } });
  const routes = [
    route(
      forward(
        [
          {
            weight: 1,
            cluster: 'main',
            filters: [
              {
                type: 'RequestHeaderModifier',
                headers: { set: [{ name: 'x-backend-only', value: '1' }], add: [], remove: [] },
              },
            ],
          },
        ],
        { mirrors: [all('shadow')] },
      ),
      prefix('/all'),
      [
        {
          type: 'RequestHeaderModifier',
          headers: { set: [{ name: 'x-route-filter', value: 'applied' }], add: [], remove: [] },
        },
      ],
    ),
    route(forward(['main'], { mirrors: [all('shadow'), all('second')] }), prefix('/two')),
    route(forward(['main'], { mirrors: [{ cluster: 'sampled', fraction: 0.25 }] }), prefix('/quarter')),
    route(forward(['main'], { timeoutMs: 300, mirrors: [all('hanging')] }), prefix('/hanging')),
    route(forward(['main'], { mirrors: [all('refusing')] }), prefix('/refusing')),
  ];
  const fleetConfig = simpleFleet(
    [vhost(80, 'example.com', routes)],
    [
      upstream('main', [mainPort]),
      upstream('shadow', [shadowPort]),
      upstream('second', [secondPort]),
      upstream('sampled', [sampledPort]),
      upstream('hanging', [hangingPort]),
      upstream('refusing', [await freePort()]),
    ],
  );
  assert.equal((await proxy.apply(fleetConfig)).ok, true);
  const address = (name: string) => proxy.addresses().find((a) => a.listener === name)!.port;
  port = address('port-80');
  metricsPort = address('metrics');
});

after(async () => {
  await proxy.close();
  await Promise.all([main, shadow, second, sampled, hanging].map((r) => closeServer(r.server)));
});

function send(path: string, body?: string) {
  return httpRequest(port, path, {
    host: 'example.com',
    timeoutMs: 10_000,
    ...(body === undefined ? {} : { method: 'POST', body }),
  });
}

async function mirrorCounts(): Promise<Map<string, number>> {
  const samples = parsePrometheus((await httpRequest(metricsPort, '/metrics')).body).filter(
    (s) => s.name === 'portico_upstream_mirrors_total',
  );
  return new Map(samples.map((s) => [`${s.labels.cluster} ${s.labels.outcome}`, s.value]));
}

async function untilCounted(key: string, n: number): Promise<void> {
  let counts = await mirrorCounts();
  while ((counts.get(key) ?? 0) < n) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    counts = await mirrorCounts();
  }
}

const seenAt = (r: { seen: Seen[] }, path: string) => r.seen.filter((s) => s.path === path);

describe('proxy: RequestMirror', () => {
  it('sends a copy with the route filters and the body; the client gets the main answer', async () => {
    const reply = await send('/all/one', 'hello mirror');
    assert.equal(reply.status, 200);
    assert.equal(reply.body, 'main read 12');
    await until(() => seenAt(shadow, '/all/one').length === 1);
    const copy = seenAt(shadow, '/all/one')[0]!;
    assert.equal(copy.method, 'POST');
    assert.equal(copy.body, 'hello mirror');
    assert.equal(copy.headers['x-route-filter'], 'applied');
    assert.equal(copy.headers['x-backend-only'], undefined, "the main backend's filter is not the mirror's");
    const original = seenAt(main, '/all/one')[0]!;
    assert.equal(original.headers['x-backend-only'], '1');
    assert.equal(original.headers['x-route-filter'], 'applied');
  });

  it('sends one copy to each of several mirrors', async () => {
    assert.equal((await send('/two/a')).status, 200);
    await until(() => seenAt(shadow, '/two/a').length === 1 && seenAt(second, '/two/a').length === 1);
    assert.equal(seenAt(main, '/two/a').length, 1);
  });

  it('mirrors a share of the requests', async () => {
    const n = 400;
    for (let i = 0; i < n; i++) assert.equal((await send(`/quarter/${i}`)).status, 200);
    const counts = await mirrorCounts();
    const copies = counts.get('sampled answered') ?? 0;
    await until(() => sampled.seen.length === copies);
    // 25 % of 400 is 100, with a standard deviation of about 8.7: five of them either side.
    assert.ok(copies > 56 && copies < 144, `${copies} of ${n} mirrored`);
  });

  it('answers while a mirror hangs, and gives the copy up at the route timeout', async () => {
    const before = (await mirrorCounts()).get('hanging failed') ?? 0;
    const reply = await send('/hanging/x');
    assert.equal(reply.status, 200);
    assert.equal(reply.body, 'main read 0');
    await untilCounted('hanging failed', before + 1);
    assert.equal(seenAt(hanging, '/hanging/x').length, 1);
  });

  it('answers when the mirror refuses connections, and counts the copy failed', async () => {
    const reply = await send('/refusing/x');
    assert.equal(reply.status, 200);
    await untilCounted('refusing failed', 1);
  });

  it('skips the copy of a body larger than the proxy holds, and forwards the body whole', async () => {
    const big = 'x'.repeat(200 * 1024);
    const reply = await send('/all/big', big);
    assert.equal(reply.status, 200);
    assert.equal(reply.body, `main read ${big.length}`);
    await untilCounted('shadow skipped', 1);
    assert.equal(seenAt(shadow, '/all/big').length, 0);
  });

  it('sends no more copies than the copies in flight allowed; the rest are skipped and counted', async () => {
    const bounded = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: discardingLogger,
      metricsAddress: '127.0.0.1:0',
      limits: { maxMirrorsInFlight: 2 },
    });
    await bounded.started;
    try {
      const mainPort = (main.server.address() as AddressInfo).port;
      const hangingPort = (hanging.server.address() as AddressInfo).port;
      const config = simpleFleet(
        [
          vhost(80, 'example.com', [
            route(forward(['main'], { timeoutMs: 60_000, mirrors: [all('hanging')] })),
          ]),
        ],
        [upstream('main', [mainPort]), upstream('hanging', [hangingPort])],
      );
      assert.equal((await bounded.apply(config)).ok, true);
      const at = (name: string) => bounded.addresses().find((a) => a.listener === name)!.port;
      const before = hanging.seen.length;
      for (let i = 0; i < 5; i++) {
        const reply = await httpRequest(at('port-80'), `/bounded/${i}`, {
          host: 'example.com',
          timeoutMs: 10_000,
        });
        assert.equal(reply.status, 200);
      }
      await until(() => hanging.seen.length === before + 2);
      const samples = parsePrometheus((await httpRequest(at('metrics'), '/metrics')).body).filter(
        (s) => s.name === 'portico_upstream_mirrors_total' && s.labels.outcome === 'skipped',
      );
      assert.equal(samples[0]?.value, 3);
    } finally {
      await bounded.close();
    }
  });
});

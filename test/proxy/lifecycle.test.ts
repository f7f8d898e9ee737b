import assert from 'node:assert/strict';
import { Agent, createServer, request, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type InProcessProxy as PorticoProxy } from '../../src/proxy/index.js';
import { fleet, forward, listener, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, type EchoBody, httpRequest, listen, startEcho, until } from '../support/http.js';

function oneBackend(cluster: string, port: number) {
  return simpleFleet([vhost(80, '*', [route(forward([cluster]))])], [upstream(cluster, [port])]);
}

function get(port: number, path: string, agent: Agent): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent, headers: { host: 'x.test' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('proxy lifecycle', () => {
  const servers: Server[] = [];
  const proxies: PorticoProxy[] = [];
  let a: { port: number };
  let b: { port: number };

  before(async () => {
    const ea = await startEcho('a');
    const eb = await startEcho('b');
    servers.push(ea.server, eb.server);
    a = ea;
    b = eb;
  });
  after(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(servers.map(closeServer));
  });

  const newProxy = (extra: Parameters<typeof createProxy>[0] = {}): PorticoProxy => {
    const p = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger, ...extra });
    proxies.push(p);
    return p;
  };
  const portOf = (p: PorticoProxy, name = 'port-80') => p.addresses().find((x) => x.listener === name)!.port;

  it('rejects an invalid resource alone, naming the field: its last good version serves, the rest applies', async () => {
    const proxy = newProxy();
    assert.equal(proxy.ready, false);
    assert.equal((await proxy.apply(oneBackend('default/a:80', a.port))).ok, true);
    assert.equal(proxy.ready, true);
    // The virtual host breaks a rule; the endpoints change in the same update (a → b).
    const bad = oneBackend('default/a:80', b.port) as unknown as {
      virtualHosts: { routes: { action: { timeoutMs: unknown } }[] }[];
    };
    bad.virtualHosts[0]!.routes[0]!.action.timeoutMs = 'soon';
    const outcome = await proxy.apply(bad);
    assert.equal(outcome.ok, true);
    assert.deepEqual(outcome.ok ? outcome.rejected?.map((r) => `${r.type} ${r.name}: ${r.error}`) : [], [
      'virtualHosts port-80/*: virtualHosts[0].routes[0].action.timeoutMs: must be an integer from 0 to 86400000',
    ]);
    const reply = await httpRequest(portOf(proxy), '/');
    assert.equal(reply.status, 200);
    assert.equal((JSON.parse(reply.body) as EchoBody).pod, 'b');
    // Not a config at all: refused whole, the previous one keeps serving.
    const whole = await proxy.apply({ schemaVersion: 99 });
    assert.equal(whole.ok, false);
    assert.equal((await httpRequest(portOf(proxy), '/')).status, 200);
  });

  it('reuses unchanged virtual hosts across applies and still follows endpoint changes', async () => {
    const proxy = newProxy();
    const first = oneBackend('default/x:80', a.port);
    await proxy.apply(first);
    const port = portOf(proxy);
    assert.equal((JSON.parse((await httpRequest(port, '/')).body) as EchoBody).pod, 'a');
    // Same VirtualHost objects, new endpoints for the cluster.
    const second = {
      ...first,
      endpoints: [{ name: 'default/x:80', endpoints: [{ address: '127.0.0.1', port: b.port }] }],
    };
    assert.ok((await proxy.apply(second)).ok);
    assert.equal((JSON.parse((await httpRequest(port, '/')).body) as EchoBody).pod, 'b');
  });

  it('reports a listener that cannot bind and still applies the others', async () => {
    const blocker = createServer();
    servers.push(blocker);
    const taken = await listen(blocker);
    const proxy = newProxy({ portMap: (p) => (p === 81 ? taken : 0) });
    const vh80 = vhost(80, '*', [route(forward(['default/a:80']))]);
    const vh81 = vhost(81, '*', [route(forward(['default/a:80']))]);
    const config = fleet(
      [
        { listener: listener(80), vhosts: [vh80] },
        { listener: listener(81), vhosts: [vh81] },
      ],
      [upstream('default/a:80', [a.port])],
    );
    const outcome = await proxy.apply(config);
    assert.ok(outcome.ok);
    assert.deepEqual(
      outcome.listenerErrors.map((e) => e.listener),
      ['port-81'],
    );
    assert.match(outcome.listenerErrors[0]!.message, /EADDRINUSE/);
    assert.equal((await httpRequest(portOf(proxy), '/')).status, 200);
  });

  it('adds and removes listeners without disturbing the others', async () => {
    const proxy = newProxy();
    const vh80 = vhost(80, '*', [route(forward(['default/a:80']))]);
    const vh81 = vhost(81, '*', [route(forward(['default/b:80']))]);
    const ups = [upstream('default/a:80', [a.port]), upstream('default/b:80', [b.port])];
    await proxy.apply(fleet([{ listener: listener(80), vhosts: [vh80] }], ups));
    const port80 = portOf(proxy);
    await proxy.apply(
      fleet(
        [
          { listener: listener(80), vhosts: [vh80] },
          { listener: listener(81), vhosts: [vh81] },
        ],
        ups,
      ),
    );
    assert.equal(portOf(proxy), port80, 'port-80 kept its socket');
    const port81 = portOf(proxy, 'port-81');
    assert.equal((JSON.parse((await httpRequest(port81, '/')).body) as EchoBody).pod, 'b');
    await proxy.apply(fleet([{ listener: listener(80), vhosts: [vh80] }], ups));
    assert.equal(proxy.addresses().filter((x) => x.listener === 'port-81').length, 0);
    await assert.rejects(httpRequest(port81, '/'), /ECONNREFUSED/);
    assert.equal((await httpRequest(port80, '/')).status, 200);
  });

  it('swaps configs under continuous load without failing a request', async () => {
    const proxy = newProxy();
    await proxy.apply(oneBackend('default/a:80', a.port));
    const port = portOf(proxy);
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    let stop = false;
    let ok = 0;
    const failures: string[] = [];
    const pods = new Set<string>();
    const worker = async (): Promise<void> => {
      while (!stop) {
        try {
          const r = await get(port, '/?delay=2ms', agent);
          if (r.status === 200) {
            ok++;
            pods.add((JSON.parse(r.body) as EchoBody).pod);
          } else failures.push(String(r.status));
        } catch (error) {
          failures.push((error as Error).message);
        }
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    for (let i = 0; i < 20; i++) {
      const next = i % 2 === 0 ? oneBackend('default/b:80', b.port) : oneBackend('default/a:80', a.port);
      const outcome = await proxy.apply(next);
      assert.ok(outcome.ok);
      await sleep(15);
    }
    stop = true;
    await Promise.all(workers);
    agent.destroy();
    assert.deepEqual(failures, []);
    assert.ok(ok > 20, `only ${ok} requests`);
    assert.deepEqual([...pods].sort(), ['a', 'b']);
  });

  it('least-request balancing avoids the endpoint with a request in flight', async () => {
    const hang = createServer(() => {});
    servers.push(hang);
    const hangPort = await listen(hang);
    const proxy = newProxy({ loadBalancing: 'least-request' });
    await proxy.apply(
      simpleFleet(
        [vhost(80, '*', [route(forward(['default/ab:80']))])],
        [upstream('default/ab:80', [hangPort, a.port])],
      ),
    );
    const port = portOf(proxy);
    const stuck = httpRequest(port, '/').catch(() => undefined); // lands on the silent endpoint first
    await until(() => proxy.inFlight() === 1);
    for (let i = 0; i < 6; i++) {
      const reply = await httpRequest(port, '/');
      assert.equal((JSON.parse(reply.body) as EchoBody).pod, 'a');
    }
    hang.closeAllConnections();
    await stuck;
  });

  it('drains: readiness fails, requests in flight finish, then the listeners close', async () => {
    const proxy = newProxy({ readyAddress: '127.0.0.1:0' });
    await proxy.started;
    await proxy.apply(oneBackend('default/a:80', a.port));
    const port = portOf(proxy);
    const readyPort = portOf(proxy, 'ready');
    assert.equal((await httpRequest(readyPort, '/ready')).status, 200);
    const inFlight = Array.from({ length: 5 }, () => httpRequest(port, '/?delay=1s'));
    await until(() => proxy.inFlight() === 5);
    const drained = proxy.drain({ drainMs: 50, maxMs: 10_000 });
    assert.equal(proxy.ready, false);
    assert.equal((await httpRequest(readyPort, '/ready')).status, 503);
    const replies = await Promise.all(inFlight);
    assert.deepEqual(
      replies.map((r) => r.status),
      [200, 200, 200, 200, 200],
    );
    await drained;
    assert.equal(proxy.inFlight(), 0);
    await assert.rejects(httpRequest(port, '/'), /ECONNREFUSED/);
    assert.equal((await proxy.apply(oneBackend('default/a:80', a.port))).ok, false);
  });
});

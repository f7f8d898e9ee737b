// A resource the proxy refuses is refused alone: everything else of the same and later versions applies, deltas
// keep flowing, and the controller learns which resource was refused and why.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startDiscoveryClient } from '../../src/discovery/client.js';
import { createDiscoveryServer } from '../../src/discovery/server.js';
import type { FleetConfig, RouteFilter } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, type EchoBody, httpRequest, startEcho } from '../support/http.js';
import { fleetTls, testCertificates, waitFor } from './fixtures.js';

const certs = testCertificates();

function fleetOf(aCluster: string, bFilters: RouteFilter[], ports: { a: number; b: number }): FleetConfig {
  const config = simpleFleet(
    [
      vhost(80, 'a.example.com', [route(forward([aCluster]))]),
      vhost(80, 'b.example.com', [route(forward(['default/a:80']), {}, bFilters)]),
    ],
    [upstream('default/a:80', [ports.a]), upstream('default/b:80', [ports.b])],
  );
  // Stable route names across versions, as the translator gives them.
  config.virtualHosts.forEach((v) => {
    v.routes.forEach((r, i) => {
      r.name = `${v.hostname}/rule/0/match/${i}`;
    });
  });
  return config;
}

test('one bad virtual host is refused alone; an unrelated change in the same fleet still applies', async (t) => {
  const a = await startEcho('a');
  const b = await startEcho('b');
  t.after(() => Promise.all([closeServer(a.server), closeServer(b.server)]));
  const server = createDiscoveryServer({
    address: '127.0.0.1:0',
    tls: { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem },
    auth: { mode: 'mtls' },
  });
  const { port } = await server.start();
  t.after(() => server.close());
  const proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
  t.after(() => proxy.close());
  const client = startDiscoveryClient({
    address: `127.0.0.1:${port}`,
    fleet: 'default/eg',
    node: 'node-1',
    tls: fleetTls('default/eg'),
    apply: (config, version) => proxy.apply(config, version),
    backoff: { initialMs: 50, maxMs: 200 },
  });
  t.after(() => client.stop());
  const ports = { a: a.port, b: b.port };
  const podFor = async (host: string): Promise<string | undefined> => {
    const listener = proxy.addresses().find((x) => x.listener === 'port-80');
    if (listener === undefined) return undefined;
    const reply = await httpRequest(listener.port, '/', { host });
    return reply.status === 200 ? (JSON.parse(reply.body) as EchoBody).pod : undefined;
  };
  // Versions start from the server's clock: each step waits for the next one after the last acked.
  let last = 0n;
  const acked = async (step: number) => {
    const node = await waitFor(`step ${step} acked`, () =>
      server.nodes().find((n) => n.appliedVersion !== undefined && BigInt(n.appliedVersion) > last),
    );
    last = BigInt(node.appliedVersion!);
    return node;
  };

  server.setFleet(fleetOf('default/a:80', [], ports));
  await acked(1);
  assert.equal(await podFor('b.example.com'), 'a');

  // A header value no proxy may send (as an older or buggy controller might hand out).
  const crlf: RouteFilter = {
    type: 'RequestHeaderModifier',
    headers: { set: [{ name: 'x-a', value: 'one\r\nx-injected: two' }], add: [], remove: [] },
  };
  server.setFleet(fleetOf('default/a:80', [crlf], ports));
  const second = await acked(2);
  assert.match(
    second.lastError ?? '',
    /virtualHosts port-80\/b\.example\.com: .*set\[0\]\.value: must not contain CR, LF/,
  );

  // The bad virtual host is still there; the other one moves to backend b. That change must apply.
  server.setFleet(fleetOf('default/b:80', [crlf], ports));
  await acked(3);
  assert.equal(await podFor('a.example.com'), 'b');
  assert.equal(
    await podFor('b.example.com'),
    'a',
    'the last good version of the refused virtual host serves',
  );

  // Fixed: everything applies, the error clears.
  server.setFleet(fleetOf('default/b:80', [], ports));
  const fixed = await acked(4);
  assert.equal(fixed.lastError, undefined);
});

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createDiscoveryServer, type DiscoveryServer } from '../../src/discovery/server.js';
import { FLEET_CONFIG_SCHEMA_VERSION } from '../../src/ir/fleet-config.js';
import {
  decodeResources,
  fleetTls,
  openRawStream,
  sampleFleet,
  testCertificates,
  virtualHost,
  waitFor,
} from './fixtures.js';

let server: DiscoveryServer;
let port: number;
const certs = testCertificates();

before(async () => {
  server = createDiscoveryServer({
    address: '127.0.0.1:0',
    tls: { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem },
    auth: { mode: 'mtls' },
  });
  ({ port } = await server.start());
});
after(() => server.close());

test('a new stream gets every resource of its fleet, marked full', async () => {
  const config = sampleFleet('default/full', [
    virtualHost('a.example.com', 'default/a:80'),
    virtualHost('b.example.com', 'default/a:80'),
  ]);
  server.setFleet(config);
  const stream = openRawStream({ port, tls: fleetTls('default/full'), fleet: 'default/full' });
  const first = await stream.next();
  assert.equal(first.full, true);
  assert.equal(first.schemaVersion, FLEET_CONFIG_SCHEMA_VERSION);
  const got = decodeResources(first);
  assert.deepEqual(
    got.map((r) => `${r.type}/${r.name}`),
    [
      'gateways/default/full',
      'clusters/default/a:80',
      'endpoints/default/a:80',
      'virtualHosts/port-80/a.example.com',
      'virtualHosts/port-80/b.example.com',
      'listeners/port-80',
    ],
  );
  assert.deepEqual(got.find((r) => r.name === 'port-80/b.example.com')?.value, config.virtualHosts[1]);
  stream.close();
});

test('one changed VirtualHost sends exactly that resource; a removed one is sent as a removal', async () => {
  const a = virtualHost('a.example.com', 'default/a:80');
  const b = virtualHost('b.example.com', 'default/a:80');
  server.setFleet(sampleFleet('default/delta', [a, b]));
  const stream = openRawStream({ port, tls: fleetTls('default/delta'), fleet: 'default/delta' });
  const first = await stream.next();

  const b2 = virtualHost('b.example.com', 'default/a:80', '/v2');
  server.setFleet(sampleFleet('default/delta', [a, b2]));
  const second = await stream.next();
  assert.equal(second.full, false);
  assert.ok(Number(second.version) > Number(first.version), 'versions grow');
  assert.deepEqual(decodeResources(second), [
    { type: 'virtualHosts', name: 'port-80/b.example.com', value: b2 },
  ]);
  assert.deepEqual(second.removed, []);

  // Same config again: nothing to send, no new version.
  server.setFleet(sampleFleet('default/delta', [a, b2]));
  const withoutB = sampleFleet('default/delta', [a]);
  server.setFleet(withoutB);
  const third = await stream.next();
  assert.equal(Number(third.version), Number(second.version) + 1);
  assert.deepEqual(decodeResources(third), [], 'nothing else changed: the listener does not list its hosts');
  assert.deepEqual(third.removed, [{ type: 'virtualHosts', name: 'port-80/b.example.com' }]);
  stream.close();
});

test('Ack and Nack are recorded per node with versions, gateways and listener errors', async () => {
  server.setFleet(sampleFleet('default/acks', [], 3));
  const changes: number[] = [];
  const onChange = (): void => {
    changes.push(1);
  };
  server.on('change', onChange);
  const stream = openRawStream({ port, tls: fleetTls('default/acks'), fleet: 'default/acks', node: 'pod-a' });
  const first = await stream.next();
  stream.write({
    ack: {
      version: first.version,
      nonce: first.nonce,
      listenerErrors: [{ listener: 'port-80', message: 'bind EADDRINUSE' }],
      appliedGateways: [{ name: 'default/acks', generation: 3 }],
    },
  });
  const acked = await waitFor('the ack', () =>
    server.nodes().find((n) => n.node === 'pod-a' && n.appliedVersion === first.version),
  );
  assert.equal(acked.fleet, 'default/acks');
  assert.deepEqual(acked.appliedGateways, { 'default/acks': 3 });
  assert.deepEqual(acked.listenerErrors, [{ listener: 'port-80', message: 'bind EADDRINUSE' }]);
  assert.equal(acked.lastError, undefined);

  server.setFleet(sampleFleet('default/acks', [virtualHost('c.example.com', 'default/a:80')], 4));
  const second = await stream.next();
  stream.write({ nack: { version: second.version, nonce: second.nonce, error: 'bad regex in route x' } });
  const nacked = await waitFor('the nack', () =>
    server.nodes().find((n) => n.node === 'pod-a' && n.lastError),
  );
  assert.equal(nacked.appliedVersion, first.version, 'the applied version stays the last acked one');
  assert.match(
    nacked.lastError ?? '',
    new RegExp(`version ${second.version} rejected: bad regex in route x`),
  );
  assert.deepEqual(nacked.appliedGateways, { 'default/acks': 3 });

  // After a Nack the next update is the whole fleet, since the proxy discarded the delta.
  server.setFleet(sampleFleet('default/acks', [virtualHost('d.example.com', 'default/a:80')], 5));
  const third = await stream.next();
  assert.equal(third.full, true);
  assert.equal(third.resources.length, 5);
  stream.close();
  await waitFor('the disconnect', () => !server.nodes().some((n) => n.node === 'pod-a'));
  server.off('change', onChange);
  assert.ok(changes.length >= 4, `change fired on connect, ack, nack and disconnect (${changes.length})`);
});

test('a Nack while a newer version exists is answered with the whole fleet at once', async () => {
  server.setFleet(sampleFleet('default/race'));
  const stream = openRawStream({ port, tls: fleetTls('default/race'), fleet: 'default/race' });
  await stream.next();
  server.setFleet(sampleFleet('default/race', [virtualHost('x.example.com', 'default/a:80')]));
  const second = await stream.next();
  server.setFleet(sampleFleet('default/race', [virtualHost('y.example.com', 'default/a:80')]));
  const third = await stream.next();
  assert.equal(third.full, false);
  stream.write({ nack: { version: second.version, nonce: second.nonce, error: 'no' } });
  const fourth = await stream.next();
  assert.equal(fourth.full, true);
  assert.equal(fourth.version, third.version);
  stream.close();
});

test('a stream for a fleet not known yet waits, and gets everything once setFleet provides it', async () => {
  const stream = openRawStream({
    port,
    tls: fleetTls('default/later'),
    fleet: 'default/later',
    node: 'early',
  });
  await waitFor('the node to register', () => server.nodes().find((n) => n.node === 'early'));
  assert.equal(stream.messages.length, 0);
  server.setFleet(sampleFleet('default/later'));
  const first = await stream.next();
  assert.equal(first.full, true);
  assert.equal(first.resources.length, 5);
  // Removing the fleet sends nothing; bringing it back sends everything again with a newer version.
  server.removeFleet('default/later');
  server.setFleet(sampleFleet('default/later'));
  const second = await stream.next();
  assert.equal(second.full, true);
  assert.ok(Number(second.version) > Number(first.version));
  stream.close();
});

test('other fleets get nothing from a change to one fleet', async () => {
  server.setFleet(sampleFleet('default/one'));
  server.setFleet(sampleFleet('default/two'));
  const one = openRawStream({ port, tls: fleetTls('default/one'), fleet: 'default/one' });
  const two = openRawStream({ port, tls: fleetTls('default/two'), fleet: 'default/two' });
  await one.next();
  await two.next();
  server.setFleet(sampleFleet('default/one', [virtualHost('z.example.com', 'default/a:80')]));
  await one.next();
  server.setFleet(sampleFleet('default/two', [virtualHost('w.example.com', 'default/a:80')]));
  const update = await two.next();
  assert.deepEqual(
    decodeResources(update).map((r) => r.name),
    ['port-80/w.example.com'],
  );
  assert.equal(two.messages.length, 2, 'fleet two saw only its own updates');
  one.close();
  two.close();
});

test('setFleet refuses a config with duplicate names, naming the field', () => {
  const config = sampleFleet('default/bad');
  config.clusters.push({ ...config.clusters[0]! });
  assert.throws(() => server.setFleet(config), /clusters\[1\]\.name 'default\/a:80' is not unique/);
});

test('a hello without node or fleet is refused with INVALID_ARGUMENT', async () => {
  const stream = openRawStream({ port, tls: fleetTls('default/eg'), fleet: '', node: '' });
  const status = await stream.closed;
  assert.equal(status.code, 3);
  assert.match(status.details, /hello naming node and fleet/);
});

test('a port in use is a clear error, and start can be retried', async () => {
  const clash = createDiscoveryServer({
    address: `127.0.0.1:${port}`,
    tls: { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem },
    auth: { mode: 'mtls' },
  });
  await assert.rejects(clash.start(), new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}`));
  const moved = await clash.start().catch((error: Error) => error);
  assert.ok(moved instanceof Error, 'still in use');
  assert.doesNotMatch(moved.message, /already started/);
  await clash.close();
});

test('a stream that never says hello is closed after the hello timeout', async (t) => {
  const quick = createDiscoveryServer({
    address: '127.0.0.1:0',
    tls: { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem },
    auth: { mode: 'mtls' },
    helloTimeoutMs: 100,
  });
  const started = await quick.start();
  t.after(() => quick.close());
  const stream = openRawStream({ port: started.port, tls: fleetTls('default/eg'), hello: false });
  const status = await stream.closed;
  assert.equal(status.code, 4);
  assert.match(status.details, /no hello within 100 ms/);
});

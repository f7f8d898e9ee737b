import assert from 'node:assert/strict';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { test } from 'node:test';
import { generateCertificates, issueFleetCertificate } from '../../src/certificates/certs.js';
import { type DiscoveryClient, startDiscoveryClient } from '../../src/discovery/client.js';
import { createDiscoveryServer, type DiscoveryServer } from '../../src/discovery/server.js';
import type { ApplyOutcome } from '../../src/ir/apply-outcome.js';
import type { FleetConfig } from '../../src/ir/fleet-config.js';
import { createLogger } from '../../src/platform/log-line.js';
import { fleetTls, sampleFleet, testCertificates, virtualHost, waitFor } from './fixtures.js';

const certs = testCertificates();
const FAST_BACKOFF = { initialMs: 50, maxMs: 200 };

function mtlsServer(address = '127.0.0.1:0'): DiscoveryServer {
  return createDiscoveryServer({
    address,
    tls: { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem },
    auth: { mode: 'mtls' },
  });
}

interface Applied {
  config: FleetConfig;
  version: string;
}

function mtlsClient(
  port: number,
  fleet: string,
  decide: (config: FleetConfig) => ApplyOutcome = () => ({ ok: true, listenerErrors: [] }),
): { client: DiscoveryClient; applied: Applied[] } {
  const applied: Applied[] = [];
  const client = startDiscoveryClient({
    address: `127.0.0.1:${port}`,
    fleet,
    node: 'node-1',
    tls: fleetTls(fleet),
    apply: async (config, version) => {
      const outcome = decide(config);
      if (outcome.ok) applied.push({ config, version });
      return outcome;
    },
    backoff: FAST_BACKOFF,
  });
  return { client, applied };
}

test('the client applies the whole fleet, then each delta on top of it, and acks each version', async (t) => {
  const server = mtlsServer();
  const { port } = await server.start();
  t.after(() => server.close());
  const a = virtualHost('a.example.com', 'default/a:80');
  const b = virtualHost('b.example.com', 'default/a:80');
  const v1 = sampleFleet('default/eg', [a, b]);
  server.setFleet(v1);
  const { client, applied } = mtlsClient(port, 'default/eg');
  t.after(() => client.stop());

  await waitFor('the first apply', () => applied.length === 1);
  assert.deepEqual(applied[0]!.config, v1);
  const acked = await waitFor('the ack', () =>
    server.nodes().find((n) => n.appliedVersion === applied[0]!.version),
  );
  assert.deepEqual(acked.appliedGateways, { 'default/eg': 1 });
  assert.equal(client.status().connected, true);

  const v2 = sampleFleet('default/eg', [a, virtualHost('b.example.com', 'default/a:80', '/new')], 2);
  server.setFleet(v2);
  await waitFor('the second apply', () => applied.length === 2);
  assert.deepEqual(applied[1]!.config, v2);

  const v3 = sampleFleet('default/eg', [b], 3);
  server.setFleet(v3);
  await waitFor('the third apply', () => applied.length === 3);
  assert.deepEqual(applied[2]!.config, v3, 'removals are applied too');
  await waitFor('the third ack', () => server.nodes().find((n) => n.appliedVersion === applied[2]!.version));
  assert.deepEqual(server.nodes()[0]?.appliedGateways, { 'default/eg': 3 });
  assert.equal(client.status().appliedVersion, applied[2]!.version);
});

test('after a Nack the client keeps its applied state and rebuilds from a full update', async (t) => {
  const server = mtlsServer();
  const { port } = await server.start();
  t.after(() => server.close());
  const a = virtualHost('a.example.com', 'default/a:80');
  const bad = virtualHost('bad.example.com', 'default/a:80');
  server.setFleet(sampleFleet('default/nack', [a]));
  const { client, applied } = mtlsClient(port, 'default/nack', (config) =>
    config.virtualHosts.some(
      (v) => v.hostname === 'bad.example.com' && v.routes[0]?.match.path?.value === '/',
    )
      ? { ok: false, error: 'route rejected' }
      : { ok: true, listenerErrors: [] },
  );
  t.after(() => client.stop());
  await waitFor('the first apply', () => applied.length === 1);

  server.setFleet(sampleFleet('default/nack', [a, bad], 2));
  const nacked = await waitFor('the nack', () => server.nodes().find((n) => n.lastError));
  assert.match(nacked.lastError ?? '', /route rejected/);
  assert.equal(nacked.appliedVersion, applied[0]!.version);
  assert.match(client.status().lastError ?? '', /route rejected/);
  assert.equal(client.status().appliedVersion, applied[0]!.version);

  // The next change touches another resource only; the proxy must still end up with the server's whole state.
  const fixed = sampleFleet('default/nack', [a, virtualHost('bad.example.com', 'default/a:80', '/ok')], 3);
  server.setFleet(fixed);
  await waitFor('the apply after the nack', () => applied.length === 2);
  assert.deepEqual(applied[1]!.config, fixed);
  await waitFor('the nack to be cleared', () => server.nodes().find((n) => n.lastError === undefined));
  assert.equal(client.status().lastError, undefined);
});

test('an apply that throws is a Nack with its message', async (t) => {
  const server = mtlsServer();
  const { port } = await server.start();
  t.after(() => server.close());
  server.setFleet(sampleFleet('default/throw'));
  const client = startDiscoveryClient({
    address: `127.0.0.1:${port}`,
    fleet: 'default/throw',
    node: 'n',
    tls: fleetTls('default/throw'),
    apply: async () => {
      throw new Error('listener port-80: unknown virtual host');
    },
    backoff: FAST_BACKOFF,
  });
  t.after(() => client.stop());
  const node = await waitFor('the nack', () => server.nodes().find((n) => n.lastError));
  assert.match(node.lastError ?? '', /unknown virtual host/);
  assert.equal(node.appliedVersion, undefined);
});

test('across a server restart the client keeps its config, applies nothing while away, and resyncs', async (t) => {
  let server = mtlsServer();
  const { port } = await server.start();
  t.after(() => server.close());
  const v1 = sampleFleet('default/restart');
  server.setFleet(v1);
  const { client, applied } = mtlsClient(port, 'default/restart');
  t.after(() => client.stop());
  await waitFor('the first apply', () => applied.length === 1);
  const firstVersion = applied[0]!.version;

  await server.close();
  await waitFor('the client to notice', () => !client.status().connected);
  assert.equal(client.status().appliedVersion, firstVersion, 'the last applied config stays');
  assert.match(client.status().lastError ?? '', /discovery stream closed/);
  assert.equal(applied.length, 1, 'no apply while the server is away');

  // The controller comes back with a changed config: one full resync.
  server = mtlsServer(`127.0.0.1:${port}`);
  await server.start();
  const v2 = sampleFleet('default/restart', [virtualHost('new.example.com', 'default/a:80')], 2);
  server.setFleet(v2);
  await waitFor('the resync', () => applied.length === 2);
  assert.deepEqual(applied[1]!.config, v2);
  await waitFor('the ack after restart', () =>
    server.nodes().find((n) => n.appliedVersion === applied[1]!.version),
  );
  assert.equal(client.status().connected, true);

  // And once more with the same config: nothing to apply, but the new server still learns what is applied.
  await server.close();
  await waitFor('the client to notice again', () => !client.status().connected);
  server = mtlsServer(`127.0.0.1:${port}`);
  await server.start();
  server.setFleet(v2);
  const node = await waitFor('the ack of the unchanged config', () =>
    server.nodes().find((n) => n.appliedVersion),
  );
  assert.deepEqual(node.appliedGateways, { 'default/restart': 2 });
  assert.equal(applied.length, 2, 'an identical resync is not applied again');
});

test('reconnectNow dials a restarted server at once instead of after the backoff; versions never repeat', async (t) => {
  let server = mtlsServer();
  const { port } = await server.start();
  t.after(() => server.close());
  const v1 = sampleFleet('default/now');
  server.setFleet(v1);
  const applied: Applied[] = [];
  const client = startDiscoveryClient({
    address: `127.0.0.1:${port}`,
    fleet: 'default/now',
    node: 'node-now',
    tls: fleetTls('default/now'),
    apply: async (config, version) => {
      applied.push({ config, version });
      return { ok: true, listenerErrors: [] };
    },
    backoff: { initialMs: 60_000, maxMs: 60_000 },
  });
  t.after(() => client.stop());
  await waitFor('the first apply', () => applied.length === 1);
  const before = await waitFor('the ack', () => server.nodes().find((n) => n.appliedVersion)?.appliedVersion);
  await server.close();
  await waitFor('the client to notice', () => !client.status().connected);

  server = mtlsServer(`127.0.0.1:${port}`);
  await server.start();
  server.setFleet(v1);
  client.reconnectNow();
  const after = await waitFor(
    'the ack on the new server, long before the 60 s backoff',
    () => server.nodes().find((n) => n.appliedVersion)?.appliedVersion,
    5_000,
  );
  assert.notEqual(after, before, 'a new controller never reuses a version of the previous one');
  assert.equal(applied.length, 1, 'the same config is not applied again');
});

test('after the certificates rotate (new CA, new server, new client certificate) the client reconnects with the new ones', async (t) => {
  const fleet = 'default/rotate';
  const before = generateCertificates({ namespace: 'test-ns' });
  const after = generateCertificates({ namespace: 'test-ns' });
  const clientOf = (ca: typeof before) => issueFleetCertificate(ca.caCertPem, ca.caKeyPem, fleet);
  const serverOf = (ca: typeof before, address = '127.0.0.1:0') =>
    createDiscoveryServer({
      address,
      tls: { caPem: ca.caCertPem, certPem: ca.serverCertPem, keyPem: ca.serverKeyPem },
      auth: { mode: 'mtls' },
    });
  let server = serverOf(before);
  const { port } = await server.start();
  t.after(() => server.close());
  server.setFleet(sampleFleet(fleet));
  // What the certificate files hold: the client reads them again for every new channel.
  let files = { caPem: before.caCertPem, ...pems(clientOf(before)) };
  const applied: string[] = [];
  const client = startDiscoveryClient({
    address: `127.0.0.1:${port}`,
    fleet,
    node: 'node-1',
    tls: files,
    reloadTls: () => files,
    apply: async (_config, version) => {
      applied.push(version);
      return { ok: true, listenerErrors: [] };
    },
    backoff: FAST_BACKOFF,
  });
  t.after(() => client.stop());
  await waitFor('the first apply', () => applied.length === 1);

  await server.close();
  files = { caPem: after.caCertPem, ...pems(clientOf(after)) };
  server = serverOf(after, `127.0.0.1:${port}`);
  await server.start();
  server.setFleet(sampleFleet(fleet, [virtualHost('new.example.com', 'default/a:80')], 2));
  await waitFor('the config of the rotated server', () => applied.length === 2);
  assert.equal(client.status().connected, true);
});

function pems(issued: { certPem: string; keyPem: string }) {
  return { certPem: issued.certPem, keyPem: issued.keyPem };
}

test('a connection attempt that hangs (accepted, never answered) is abandoned within the connect timeout', async (t) => {
  // A listener that accepts and then says nothing: the TLS handshake never completes.
  const held: Socket[] = [];
  const silent = createServer((socket) => held.push(socket));
  t.after(() => {
    for (const socket of held) socket.destroy();
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const port = (silent.address() as AddressInfo).port;
  const fleet = 'default/hang';
  const applied: string[] = [];
  const logged: string[] = [];
  const client = startDiscoveryClient({
    address: `127.0.0.1:${port}`,
    fleet,
    node: 'node-1',
    tls: fleetTls(fleet),
    apply: async (_config, version) => {
      applied.push(version);
      return { ok: true, listenerErrors: [] };
    },
    backoff: FAST_BACKOFF,
    connectTimeoutMs: 1000,
    log: createLogger('debug', (line) => logged.push(line)),
  });
  t.after(() => client.stop());
  await waitFor('a connection to the silent listener', () => held.length > 0);
  // The silent listener goes; the real server takes its port while the first attempt still hangs.
  // close() stops accepting at once; its callback would wait for the held socket, so it is not awaited.
  silent.close();
  const server = mtlsServer(`127.0.0.1:${port}`);
  await server.start();
  t.after(() => server.close());
  server.setFleet(sampleFleet(fleet));
  await waitFor('the first apply', () => applied.length === 1, 8000);
  assert.ok(
    logged.some((line) => /cannot reach .*: no connection within 1000 ms/.test(line)),
    `the abandoned attempt is logged: ${logged.join(' | ')}`,
  );
});

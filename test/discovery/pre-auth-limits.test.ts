// Before a proxy is authorized it can cost the controller little: unauthorized connections are capped per
// source address (one pod cannot lock out the others), a connection carries few streams at once, a token is
// reviewed only after the stream's hello and then answered from a cache, and uncached reviews are budgeted.
import assert from 'node:assert/strict';
import { connect as http2Connect } from 'node:http2';
import { connect as netConnect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { Client, Metadata, type StatusObject } from '@grpc/grpc-js';
import type { ClientMessage, ServerMessage } from '../../src/discovery/protocol.js';
import { streamMethod } from '../../src/discovery/protocol.js';
import { createDiscoveryServer, type DiscoveryServer, type Identity } from '../../src/discovery/server.js';
import { createTls13ChannelCredentials } from '../../src/discovery/tls.js';
import { openRawStream, sampleFleet, testCertificates, waitFor } from './fixtures.js';

const certs = testCertificates();
const GRPC_UNAUTHENTICATED = 16;
const GRPC_RESOURCE_EXHAUSTED = 8;
let server: DiscoveryServer;
let port: number;
const reviewed: string[] = [];

async function authenticate(token: string): Promise<Identity> {
  reviewed.push(token);
  const [kind, fleet = ''] = token.split('.');
  if (kind !== 'valid') throw new Error('token not recognised by the TokenReview');
  return { username: `sa:${fleet}`, groups: [], extra: { fleet: [fleet] }, expiresAt: Date.now() + 60_000 };
}

/** A token-mode discovery server on loopback whose reviews accept `valid.<fleet>` tokens. */
function tokenServer(extra: { capLoopbackSources?: boolean } = {}) {
  return createDiscoveryServer({
    address: '127.0.0.1:0',
    tls: { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem },
    auth: {
      mode: 'token',
      authenticate,
      authorize: (identity, request) => identity.extra.fleet?.includes(request.fleet) === true,
    },
    helloTimeoutMs: 5_000,
    ...extra,
  });
}

before(async () => {
  server = tokenServer();
  ({ port } = await server.start());
  server.setFleet(sampleFleet('default/eg'));
});
after(() => server.close());

/** A TCP connection from `from` to `host:port` that sends nothing; `closed` is whether the server closed it. */
function silent(
  host: string,
  to: number,
  from = '127.0.0.1',
): Promise<{ socket: Socket; closed: () => boolean }> {
  return new Promise((resolve) => {
    let closed = false;
    const socket = netConnect({ host, port: to, localAddress: from });
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
    });
    socket.on('connect', () => resolve({ socket, closed: () => closed }));
  });
}

test('one source holding many unauthorized connections locks out no proxy from another', async (t) => {
  // Two loopback addresses stand for two pods: the flood from one, the proxy from the other.
  const open = tokenServer({ capLoopbackSources: true });
  const { port: openPort } = await open.start();
  t.after(() => open.close());
  open.setFleet(sampleFleet('default/eg'));
  const flood = [];
  for (let i = 0; i < 140; i++) flood.push(await silent('127.0.0.1', openPort, '127.0.0.2'));
  await new Promise((resolve) => setTimeout(resolve, 200));
  const held = flood.filter((c) => !c.closed()).length;
  assert.ok(held <= 8, `${held} unauthorized connections held by one address`);

  const proxy = openRawStream({
    port: openPort,
    tls: { caPem: certs.caCertPem },
    token: 'valid.default/eg',
    fleet: 'default/eg',
    node: 'restarting',
  });
  assert.equal((await proxy.next()).full, true);
  proxy.close();
  for (const c of flood) c.socket.destroy();
});

test('loopback sources (standalone: every proxy) share only the global bound', async () => {
  const local = [];
  for (let i = 0; i < 20; i++) local.push(await silent('127.0.0.1', port));
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(local.filter((c) => c.closed()).length, 0);
  for (const c of local) c.socket.destroy();
});

test('a loopback flood that fills every pre-auth slot keeps no proxy out: the oldest handshaking one makes room', async (t) => {
  // Standalone: every proxy connects from 127.0.0.1, so loopback has no per-address cap, only the global one.
  const CAP = 64;
  const local = createDiscoveryServer({
    address: '127.0.0.1:0',
    tls: { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem },
    auth: {
      mode: 'token',
      authenticate,
      authorize: (identity, request) => identity.extra.fleet?.includes(request.fleet) === true,
    },
    maxUnauthorizedConnections: CAP,
    // The flood is held long: without room made, the proxy would wait it out.
    handshakeTimeoutMs: 30_000,
    helloTimeoutMs: 30_000,
  });
  const { port: localPort } = await local.start();
  t.after(() => local.close());
  local.setFleet(sampleFleet('default/eg'));
  const flood: Awaited<ReturnType<typeof silent>>[] = [];
  for (let i = 0; i < CAP + 16; i++) flood.push(await silent('127.0.0.1', localPort));
  // The server closes what it cannot admit: every slot is then held by the flood.
  await waitFor('the 16 over the bound closed', () => flood.filter((c) => c.closed()).length >= 16);
  const proxy = openRawStream({
    port: localPort,
    tls: { caPem: certs.caCertPem },
    token: 'valid.default/eg',
    fleet: 'default/eg',
    node: 'through-the-flood',
  });
  assert.equal((await proxy.next()).full, true);
  // It got in while the flood still held its slots (they expire only after 30 s): room was made for it.
  const held = flood.filter((c) => !c.closed()).length;
  assert.ok(held >= CAP - 8, `${held} flood connections still open when the proxy got its config`);
  proxy.close();
  for (const c of flood) c.socket.destroy();
});

test('a connection may carry only a few streams at once', async () => {
  const session = http2Connect(`https://127.0.0.1:${port}`, {
    ca: certs.caCertPem,
    servername: 'localhost',
    minVersion: 'TLSv1.3',
  });
  session.on('error', () => {});
  const settings = await new Promise<{ maxConcurrentStreams?: number }>((resolve) =>
    session.once('remoteSettings', resolve),
  );
  session.destroy();
  assert.equal(settings.maxConcurrentStreams, 8);
});

test('a token is reviewed after the hello, once, however many streams present it', async () => {
  reviewed.length = 0;
  const token = 'valid.default/eg.cached';
  const silentStream = openRawStream({
    port,
    tls: { caPem: certs.caCertPem },
    token,
    hello: false,
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.deepEqual(reviewed, [], 'no review before the hello');
  silentStream.close();

  for (let i = 0; i < 5; i++) {
    const stream = openRawStream({
      port,
      tls: { caPem: certs.caCertPem },
      token,
      fleet: 'default/eg',
      node: `pod-${i}`,
    });
    assert.equal((await stream.next()).full, true);
    stream.close();
    await waitFor('the stream gone', () => !server.nodes().some((n) => n.node === `pod-${i}`));
  }
  assert.equal(reviewed.length, 1);
});

/** Streams on one connection (one grpc Client), each with its own token; resolves their final statuses. */
async function streamsOnOneConnection(tokens: string[]): Promise<StatusObject[]> {
  const method = streamMethod();
  const client = new Client(`127.0.0.1:${port}`, createTls13ChannelCredentials({ caPem: certs.caCertPem }), {
    'grpc.ssl_target_name_override': 'localhost',
  });
  const out: StatusObject[] = [];
  for (const token of tokens) {
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${token}`);
    const call = client.makeBidiStreamRequest<ClientMessage, ServerMessage>(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      metadata,
    );
    call.on('error', () => {});
    call.on('data', () => {});
    out.push(
      await new Promise<StatusObject>((resolve) => {
        call.on('status', resolve);
        call.write({ hello: { node: 'n', fleet: 'default/eg', appliedVersion: '' } });
      }),
    );
  }
  client.close();
  return out;
}

test('one connection may cause only a few uncached token reviews', async () => {
  reviewed.length = 0;
  const tokens = Array.from({ length: 8 }, (_, i) => `forged.${i}`);
  const statuses = await streamsOnOneConnection(tokens);
  assert.deepEqual(
    statuses.map((s) => s.code),
    [...Array(4).fill(GRPC_UNAUTHENTICATED), ...Array(4).fill(GRPC_RESOURCE_EXHAUSTED)],
    statuses.map((s) => s.details).join('\n'),
  );
  assert.equal(reviewed.length, 4);
});

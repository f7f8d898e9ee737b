import assert from 'node:assert/strict';
import { connect as netConnect } from 'node:net';
import { after, before, test } from 'node:test';
import { connect } from 'node:tls';
import { generateCertificates, issueFleetCertificate } from '../../src/certificates/certs.js';
import { startDiscoveryClient } from '../../src/discovery/client.js';
import { createDiscoveryServer, type DiscoveryServer, type Identity } from '../../src/discovery/server.js';
import { createLogger } from '../../src/platform/log-line.js';
import { fleetTls, openRawStream, sampleFleet, testCertificates, waitFor } from './fixtures.js';

const certs = testCertificates();
const serverTls = { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem };
const FAST_BACKOFF = { initialMs: 50, maxMs: 200 };
const GRPC_UNAVAILABLE = 14;
const GRPC_UNAUTHENTICATED = 16;
const GRPC_PERMISSION_DENIED = 7;
const GRPC_ALREADY_EXISTS = 6;

let mtls: DiscoveryServer;
let mtlsPort: number;
let tokens: DiscoveryServer;
let tokenPort: number;
const logs: string[] = [];
let shortTokens = 0;

// Token mode, as a TokenReview would answer: the service account of a fleet may read that fleet only.
async function authenticate(token: string): Promise<Identity> {
  const [kind, fleet = ''] = token.split('.');
  const identity = {
    username: `system:serviceaccount:default:${fleet}`,
    groups: [],
    extra: { fleet: [fleet] },
  };
  if (kind === 'valid') return identity;
  if (kind === 'expired') return { ...identity, expiresAt: Date.now() - 1000 };
  if (kind === 'short') return { ...identity, expiresAt: Date.now() + 300 };
  throw new Error('token not recognised by the TokenReview');
}

before(async () => {
  mtls = createDiscoveryServer({ address: '127.0.0.1:0', tls: serverTls, auth: { mode: 'mtls' } });
  ({ port: mtlsPort } = await mtls.start());
  tokens = createDiscoveryServer({
    address: '127.0.0.1:0',
    tls: serverTls,
    auth: {
      mode: 'token',
      authenticate,
      authorize: (identity, request) => identity.extra.fleet?.includes(request.fleet) === true,
    },
    log: createLogger('debug', (line) => logs.push(line)),
  });
  ({ port: tokenPort } = await tokens.start());
  mtls.setFleet(sampleFleet('default/eg'));
  tokens.setFleet(sampleFleet('default/eg'));
  tokens.setFleet(sampleFleet('default/other'));
});
after(async () => {
  await mtls.close();
  await tokens.close();
});

test('mTLS: a client without a certificate is refused and gets no config', async () => {
  const stream = openRawStream({ port: mtlsPort, tls: { caPem: certs.caCertPem } });
  const status = await stream.closed;
  assert.equal(status.code, GRPC_UNAVAILABLE);
  assert.equal(stream.messages.length, 0);

  let applied = 0;
  const client = startDiscoveryClient({
    address: `127.0.0.1:${mtlsPort}`,
    fleet: 'default/eg',
    node: 'no-cert',
    tls: { caPem: certs.caCertPem },
    apply: async () => {
      applied++;
      return { ok: true, listenerErrors: [] };
    },
    backoff: FAST_BACKOFF,
  });
  await waitFor('the refusal', () => client.status().lastError);
  await client.stop();
  assert.equal(applied, 0);
  assert.equal(client.status().connected, false);
  assert.ok(!mtls.nodes().some((n) => n.node === 'no-cert'));
});

test('mTLS: a client certificate from another CA is refused at the handshake', async () => {
  const foreign = generateCertificates();
  const forged = issueFleetCertificate(foreign.caCertPem, foreign.caKeyPem, 'default/eg');
  const stream = openRawStream({
    port: mtlsPort,
    tls: { caPem: certs.caCertPem, certPem: forged.certPem, keyPem: forged.keyPem },
  });
  const status = await stream.closed;
  assert.equal(status.code, GRPC_UNAVAILABLE);
  assert.equal(stream.messages.length, 0);
});

test('mTLS: a fleet certificate from the CA receives its own fleet', async () => {
  const stream = openRawStream({ port: mtlsPort, tls: fleetTls('default/eg'), fleet: 'default/eg' });
  const first = await stream.next();
  assert.equal(first.full, true);
  stream.close();
});

test('mTLS: a fleet certificate asking for another fleet is PERMISSION_DENIED and gets none of its config', async () => {
  mtls.setFleet(sampleFleet('default/other'));
  const stream = openRawStream({
    port: mtlsPort,
    tls: fleetTls('default/eg'),
    fleet: 'default/other',
    node: 'x',
  });
  const status = await stream.closed;
  assert.equal(status.code, GRPC_PERMISSION_DENIED);
  assert.equal(
    status.details,
    "the client certificate of fleet 'default/eg' may not receive the config of fleet 'default/other'",
  );
  assert.equal(stream.messages.length, 0);
  assert.ok(!mtls.nodes().some((n) => n.node === 'x'));
});

test('mTLS: a certificate from the CA that names no fleet (the old shared identity) is PERMISSION_DENIED', async () => {
  const ca = certs;
  // The server certificate is from the CA too, and names no fleet: the same as a shared client certificate.
  const stream = openRawStream({
    port: mtlsPort,
    tls: { caPem: ca.caCertPem, certPem: ca.serverCertPem, keyPem: ca.serverKeyPem },
    fleet: 'default/eg',
  });
  const status = await stream.closed;
  assert.ok(status.code === GRPC_PERMISSION_DENIED || status.code === GRPC_UNAVAILABLE, String(status.code));
  assert.equal(stream.messages.length, 0);
});

test('a second stream claiming a node id already connected for its fleet is refused', async () => {
  const first = openRawStream({
    port: mtlsPort,
    tls: fleetTls('default/eg'),
    fleet: 'default/eg',
    node: 'pod-1',
  });
  await first.next();
  const second = openRawStream({
    port: mtlsPort,
    tls: fleetTls('default/eg'),
    fleet: 'default/eg',
    node: 'pod-1',
  });
  const status = await second.closed;
  assert.equal(status.code, GRPC_ALREADY_EXISTS);
  assert.equal(status.details, "node 'pod-1' of fleet 'default/eg' is already connected");
  assert.equal(second.messages.length, 0);
  assert.equal(mtls.nodes().filter((n) => n.node === 'pod-1').length, 1);
  // Once the first is gone, the node id is free again.
  first.close();
  await waitFor('the first stream to go', () => !mtls.nodes().some((n) => n.node === 'pod-1'));
  const third = openRawStream({
    port: mtlsPort,
    tls: fleetTls('default/eg'),
    fleet: 'default/eg',
    node: 'pod-1',
  });
  assert.equal((await third.next()).full, true);
  third.close();
});

test('a TLS 1.2 client is refused', async () => {
  for (const port of [mtlsPort, tokenPort]) {
    const outcome = await new Promise<string>((resolve) => {
      const socket = connect({
        host: '127.0.0.1',
        port,
        ca: certs.caCertPem,
        cert: fleetTls('default/eg').certPem,
        key: fleetTls('default/eg').keyPem,
        servername: 'localhost',
        minVersion: 'TLSv1.2',
        maxVersion: 'TLSv1.2',
        ALPNProtocols: ['h2'],
      });
      socket.on('secureConnect', () => {
        socket.destroy();
        resolve(`connected with ${socket.getProtocol()}`);
      });
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
    assert.match(outcome, /ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION|protocol version/i);
  }
});

test('token: no token or a bad token is UNAUTHENTICATED, and no config is sent', async () => {
  for (const token of [undefined, 'forged.default/eg']) {
    const stream = openRawStream({
      port: tokenPort,
      tls: { caPem: certs.caCertPem },
      ...(token ? { token } : {}),
    });
    const status = await stream.closed;
    assert.equal(status.code, GRPC_UNAUTHENTICATED, `token ${token}`);
    assert.match(
      status.details,
      token === undefined ? /missing bearer token/ : /token rejected: token not recognised/,
    );
    assert.equal(stream.messages.length, 0);
  }
});

test('token: an expired token is UNAUTHENTICATED', async () => {
  const stream = openRawStream({
    port: tokenPort,
    tls: { caPem: certs.caCertPem },
    token: 'expired.default/eg',
  });
  const status = await stream.closed;
  assert.equal(status.code, GRPC_UNAUTHENTICATED);
  assert.match(status.details, /token expired/);
  assert.equal(stream.messages.length, 0);
});

test('token: a token for another fleet is PERMISSION_DENIED, and no config is sent', async () => {
  const stream = openRawStream({
    port: tokenPort,
    tls: { caPem: certs.caCertPem },
    token: 'valid.default/other',
    fleet: 'default/eg',
    node: 'pod-x',
  });
  const status = await stream.closed;
  assert.equal(status.code, GRPC_PERMISSION_DENIED);
  assert.equal(
    status.details,
    "system:serviceaccount:default:default/other is not allowed to receive the config of fleet 'default/eg' as node 'pod-x'",
  );
  assert.equal(stream.messages.length, 0);
});

test('token: the stream closes when its token expires and reconnects with a fresh token', async () => {
  const clientLogs: string[] = [];
  let applied = 0;
  const issued: string[] = [];
  const client = startDiscoveryClient({
    address: `127.0.0.1:${tokenPort}`,
    fleet: 'default/eg',
    node: 'pod-refresh',
    tls: { caPem: certs.caCertPem, serverName: 'portico-gateway.test-ns.svc' },
    token: async () => {
      const token = `short.default/eg.${++shortTokens}`;
      issued.push(token);
      return token;
    },
    apply: async () => {
      applied++;
      return { ok: true, listenerErrors: [] };
    },
    backoff: FAST_BACKOFF,
    log: createLogger('debug', (line) => clientLogs.push(line)),
  });
  await waitFor('two expiries and reconnects', () => issued.length >= 3, 15_000);
  await waitFor('the reconnected stream to ack', () =>
    tokens.nodes().find((n) => n.node === 'pod-refresh' && n.appliedVersion !== undefined),
  );
  await client.stop();
  assert.equal(applied, 1, 'a reconnect with an unchanged fleet applies nothing again');
  assert.ok(
    clientLogs.some((m) => /UNAUTHENTICATED: token expired/.test(m)),
    clientLogs.join('\n'),
  );
  assert.ok(logs.some((m) => /token expired/.test(m)));
  for (const token of issued) {
    assert.ok(!logs.some((m) => m.includes(token)), 'the server never logs a token');
    assert.ok(!clientLogs.some((m) => m.includes(token)), 'the client never logs a token');
  }
});

test('the client refuses a server whose certificate does not name the target', async () => {
  // 127.0.0.2 is loopback too, but not among the certificate's names; a wrong serverName is refused likewise.
  const other = createDiscoveryServer({ address: '127.0.0.2:0', tls: serverTls, auth: { mode: 'mtls' } });
  const { port } = await other.start();
  try {
    other.setFleet(sampleFleet('default/eg'));
    for (const target of [
      { address: `127.0.0.2:${port}`, serverName: undefined },
      { address: `127.0.0.1:${mtlsPort}`, serverName: 'elsewhere.example.com' },
    ]) {
      let applied = 0;
      const client = startDiscoveryClient({
        address: target.address,
        fleet: 'default/eg',
        node: 'n',
        tls: {
          caPem: certs.caCertPem,
          certPem: fleetTls('default/eg').certPem,
          keyPem: fleetTls('default/eg').keyPem,
          ...(target.serverName ? { serverName: target.serverName } : {}),
        },
        apply: async () => {
          applied++;
          return { ok: true, listenerErrors: [] };
        },
        backoff: FAST_BACKOFF,
      });
      await waitFor('the refusal', () => client.status().lastError);
      await client.stop();
      assert.equal(applied, 0, `${target.address} ${target.serverName}`);
    }
    assert.equal(other.nodes().length, 0);
  } finally {
    await other.close();
  }
});

/** A TCP connection that sends nothing; resolves how long after connecting the server closed it. */
function silentConnection(port: number): Promise<{ open: Promise<void>; closedAfterMs: Promise<number> }> {
  return new Promise((resolve) => {
    const socket = netConnect({ host: '127.0.0.1', port });
    socket.on('error', () => {});
    let openedAt = 0;
    const closedAfterMs = new Promise<number>((done) =>
      socket.on('close', () => done(Date.now() - openedAt)),
    );
    const open = new Promise<void>((ready) =>
      socket.on('connect', () => {
        openedAt = Date.now();
        ready();
      }),
    );
    resolve({ open, closedAfterMs });
  });
}

test('a handshake that never finishes is cut at its deadline; beyond the cap the oldest handshaking one makes room', async (t) => {
  const guarded = createDiscoveryServer({
    address: '127.0.0.1:0',
    tls: serverTls,
    auth: { mode: 'mtls' },
    handshakeTimeoutMs: 400,
    helloTimeoutMs: 5_000,
    maxUnauthorizedConnections: 2,
  });
  const { port } = await guarded.start();
  t.after(() => guarded.close());
  guarded.setFleet(sampleFleet('default/eg'));

  // An authorized proxy's connection does not count against the cap...
  const proxy = openRawStream({ port, tls: fleetTls('default/eg'), fleet: 'default/eg', node: 'pod-1' });
  assert.equal((await proxy.next()).full, true);
  // ...two silent connections take both unauthorized slots; a third is let in and the oldest closed at once
  // (a flood churns through its own slots instead of keeping a proxy out).
  const oldest = await silentConnection(port);
  await oldest.open;
  await new Promise((r) => setTimeout(r, 20));
  const next = await silentConnection(port);
  await next.open;
  await new Promise((r) => setTimeout(r, 50));
  const third = await silentConnection(port);
  await third.open;
  assert.ok((await oldest.closedAfterMs) < 300, 'the oldest made room, before its deadline');
  // The others end at the handshake deadline, long before the hello deadline.
  for (const s of [next, third]) {
    const after = await s.closedAfterMs;
    assert.ok(after >= 300 && after < 2_000, `closed after ${after} ms`);
  }
  // The slots are free again, and the authorized stream was never disturbed.
  const second = openRawStream({ port, tls: fleetTls('default/eg'), fleet: 'default/eg', node: 'pod-2' });
  assert.equal((await second.next()).full, true);
  assert.deepEqual(
    guarded
      .nodes()
      .map((n) => n.node)
      .sort(),
    ['pod-1', 'pod-2'],
  );
  proxy.close();
  second.close();
});

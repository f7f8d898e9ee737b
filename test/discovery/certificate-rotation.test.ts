// Mutual TLS with a certificate table: a fleet's proxies are accepted only with the certificate the fleet's
// Secret (or state directory) holds now, plus the one a renewal replaced while its grace lasts. Real server,
// real clients, real sockets; the client reads its certificate files from disk as `portico proxy` does.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fleetCertificateFacts, issueFleetCertificate } from '../../src/certificates/certs.js';
import {
  type CertificatePins,
  createCertificatePins,
  type FleetCertificatePin,
} from '../../src/discovery/certificate-pins.js';
import { startDiscoveryClient } from '../../src/discovery/client.js';
import { createDiscoveryServer, type DiscoveryServer } from '../../src/discovery/server.js';
import { createLogger } from '../../src/platform/log-line.js';
import { openRawStream, sampleFleet, testCertificates, virtualHost, waitFor } from './fixtures.js';

const GRPC_UNAUTHENTICATED = 16;
const FLEET = 'default/rotating';
const certs = testCertificates();
const issue = (fleet = FLEET) => issueFleetCertificate(certs.caCertPem, certs.caKeyPem, fleet);
const fingerprint = (issued: { certPem: string }) => fleetCertificateFacts(issued.certPem).fingerprint;
const tlsOf = (issued: { certPem: string; keyPem: string }) => ({ caPem: certs.caCertPem, ...issued });

let pins: CertificatePins;
let server: DiscoveryServer;
let port: number;
const dirs: string[] = [];

function pin(entries: [string, FleetCertificatePin][]): void {
  pins.replace(new Map(entries));
}

before(async () => {
  pins = createCertificatePins();
  server = createDiscoveryServer({
    address: '127.0.0.1:0',
    tls: { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem },
    auth: { mode: 'mtls', certificates: pins },
  });
  ({ port } = await server.start());
  server.setFleet(sampleFleet(FLEET));
});
after(async () => {
  await server.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Certificate files as a Secret volume holds them: replaced whole (a rename), the key before the certificate. */
function certificateFiles(issued: { certPem: string; keyPem: string }) {
  const dir = mkdtempSync(join(tmpdir(), 'portico-rotation-'));
  dirs.push(dir);
  const write = (name: string, text: string) => {
    writeFileSync(join(dir, `${name}.tmp`), text);
    renameSync(join(dir, `${name}.tmp`), join(dir, name));
  };
  const files = {
    dir,
    write(next: { certPem: string; keyPem: string }) {
      write('tls.key', next.keyPem);
      write('tls.crt', next.certPem);
    },
    read: () => ({
      caPem: certs.caCertPem,
      certPem: readFileSync(join(dir, 'tls.crt'), 'utf8'),
      keyPem: readFileSync(join(dir, 'tls.key'), 'utf8'),
    }),
  };
  files.write(issued);
  return files;
}

test('a renewed certificate is picked up by a running client: the stream moves to it, nothing is applied again', async (t) => {
  const first = issue();
  pin([[FLEET, { current: fingerprint(first) }]]);
  const files = certificateFiles(first);
  const applied: string[] = [];
  const logs: string[] = [];
  const client = startDiscoveryClient({
    address: `127.0.0.1:${port}`,
    fleet: FLEET,
    node: 'pod-rotating',
    tls: { ...files.read(), serverName: 'localhost' },
    reloadTls: files.read,
    tlsRefreshMs: 50,
    apply: async (_config, version) => {
      applied.push(version);
      return { ok: true, listenerErrors: [] };
    },
    backoff: { initialMs: 50, maxMs: 200 },
    log: createLogger('debug', (line) => logs.push(line)),
  });
  t.after(() => client.stop());
  const node = () => server.nodes().find((n) => n.node === 'pod-rotating');
  const firstStream = await waitFor(
    'the first stream to ack',
    () => node()?.appliedVersion && node()!.stream,
  );

  // The controller renews: the table learns the new certificate (the old one has a grace), then the files change.
  const second = issue();
  pin([
    [
      FLEET,
      {
        current: fingerprint(second),
        previous: { fingerprint: fingerprint(first), until: Date.now() + 60_000 },
      },
    ],
  ]);
  files.write(second);
  await waitFor('a new stream, acked', () => node()?.stream !== firstStream && node()?.appliedVersion);
  assert.deepEqual(applied.length, 1, 'the same config is not applied again: the proxy kept serving it');
  assert.equal(client.status().connected, true);
  assert.ok(!logs.some((l) => l.startsWith('error')), logs.join('\n'));

  // The grace ends at once: the stream survives, so it is the new certificate's.
  pin([[FLEET, { current: fingerprint(second) }]]);
  server.setFleet(sampleFleet(FLEET, [virtualHost('after.example.com', 'default/a:80')], 2));
  await waitFor('the next version over the moved stream', () => applied.length === 2);
  assert.equal(node()?.stream, server.nodes().find((n) => n.node === 'pod-rotating')?.stream);
  assert.equal(server.nodes().filter((n) => n.node === 'pod-rotating').length, 1);
});

test("the renewed certificate's predecessor works during the grace; at its end its stream is closed and it is refused", async () => {
  const old = issue();
  const current = issue();
  pin([
    [
      FLEET,
      { current: fingerprint(current), previous: { fingerprint: fingerprint(old), until: Date.now() + 600 } },
    ],
  ]);
  const stream = openRawStream({ port, tls: tlsOf(old), fleet: FLEET, node: 'pod-old' });
  assert.equal((await stream.next()).full, true, 'accepted within the grace');
  const status = await stream.closed;
  assert.equal(status.code, GRPC_UNAUTHENTICATED);
  assert.match(status.details, /is not the one its Secret holds now/);
  const again = openRawStream({ port, tls: tlsOf(old), fleet: FLEET, node: 'pod-old' });
  assert.equal((await again.closed).code, GRPC_UNAUTHENTICATED);
  assert.equal(again.messages.length, 0, 'no config after the grace');
  const renewed = openRawStream({ port, tls: tlsOf(current), fleet: FLEET, node: 'pod-old' });
  assert.equal((await renewed.next()).full, true, 'the current one works');
  renewed.close();
});

test('a certificate from the CA for the fleet that is not the one its Secret holds is refused, with no config', async () => {
  const current = issue();
  pin([[FLEET, { current: fingerprint(current) }]]);
  const stray = openRawStream({ port, tls: tlsOf(issue()), fleet: FLEET, node: 'pod-stray' });
  const status = await stray.closed;
  assert.equal(status.code, GRPC_UNAUTHENTICATED);
  assert.equal(
    status.details,
    `the client certificate of fleet '${FLEET}' is not the one its Secret holds now (renewed, replaced or revoked); reconnect with the current one`,
  );
  assert.equal(stray.messages.length, 0);
  assert.ok(!server.nodes().some((n) => n.node === 'pod-stray'));
});

test("replacing or deleting a fleet's Secret closes the streams of its certificate at once", async () => {
  const held = issue();
  pin([[FLEET, { current: fingerprint(held) }]]);
  const replaced = openRawStream({ port, tls: tlsOf(held), fleet: FLEET, node: 'pod-a' });
  assert.equal((await replaced.next()).full, true);
  // Replaced by hand (no grace recorded): the old certificate stops now.
  const replacement = issue();
  pin([[FLEET, { current: fingerprint(replacement) }]]);
  assert.equal((await replaced.closed).code, GRPC_UNAUTHENTICATED);

  const deleted = openRawStream({ port, tls: tlsOf(replacement), fleet: FLEET, node: 'pod-b' });
  assert.equal((await deleted.next()).full, true);
  // The fleet is gone (its Secret deleted): nothing of it is accepted.
  pin([]);
  assert.equal((await deleted.closed).code, GRPC_UNAUTHENTICATED);
  const after = openRawStream({ port, tls: tlsOf(replacement), fleet: FLEET, node: 'pod-b' });
  assert.equal((await after.closed).code, GRPC_UNAUTHENTICATED);
  assert.equal(after.messages.length, 0);
});

test('before the table is first set, a stream waits; then it is judged', async (t) => {
  const waiting = createCertificatePins();
  const late = createDiscoveryServer({
    address: '127.0.0.1:0',
    tls: { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem },
    auth: { mode: 'mtls', certificates: waiting },
  });
  const { port: latePort } = await late.start();
  t.after(() => late.close());
  late.setFleet(sampleFleet(FLEET));
  const current = issue();
  const stream = openRawStream({ port: latePort, tls: tlsOf(current), fleet: FLEET, node: 'early' });
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(stream.messages.length, 0, 'nothing before the Secrets are read');
  waiting.replace(new Map([[FLEET, { current: fingerprint(current) }]]));
  assert.equal((await stream.next()).full, true);
  stream.close();
});

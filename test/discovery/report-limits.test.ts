// A rogue or looping proxy cannot make the controller work without bound through its Acks and Nacks: a report
// that changes nothing fires no change, reports beyond a stream's rate are coalesced to the latest, a Nack of a
// stale version earns at most one full resend, and the error text a proxy may report is capped.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  ackReport,
  MAX_GATEWAY_KEY_BYTES,
  MAX_REPORTED_ITEMS,
  MAX_REPORTED_TEXT_BYTES,
} from '../../src/discovery/proxy-report.js';
import { createDiscoveryServer, type DiscoveryServer } from '../../src/discovery/server.js';
import {
  fleetTls,
  openRawStream,
  type RawStream,
  sampleFleet,
  testCertificates,
  waitFor,
} from './fixtures.js';

const certs = testCertificates();
const RATE = { burst: 5, perSecond: 10 };
let server: DiscoveryServer;
let port: number;
let changes = 0;
const countChange = () => {
  changes++;
};

before(async () => {
  server = createDiscoveryServer({
    address: '127.0.0.1:0',
    tls: { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem },
    auth: { mode: 'mtls' },
    reportRate: RATE,
  });
  ({ port } = await server.start());
  server.setFleet(sampleFleet('default/eg'));
  server.on('change', countChange);
});
after(() => server.close());

async function connected(node: string): Promise<{ stream: RawStream; version: string }> {
  const stream = openRawStream({ port, tls: fleetTls('default/eg'), fleet: 'default/eg', node });
  const first = await stream.next();
  await waitFor(`${node} connected`, () => server.nodes().some((n) => n.node === node));
  return { stream, version: first.version };
}

function ack(version: string, listenerErrors: { listener: string; message: string }[] = []) {
  return {
    ack: {
      version,
      nonce: '1',
      listenerErrors,
      appliedGateways: [{ name: 'default/eg', generation: 1 }],
      rejectedResources: [],
    },
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

test('a proxy repeating the same Ack fires one change, not one per Ack', async () => {
  const { stream, version } = await connected('looping');
  changes = 0;
  for (let i = 0; i < 300; i++) stream.write(ack(version));
  await waitFor('the Ack recorded', () =>
    server.nodes().find((n) => n.node === 'looping' && n.appliedVersion === version),
  );
  await settle();
  assert.equal(changes, 1);
  stream.close();
});

test('Acks beyond the stream rate are coalesced: few changes, and the latest report wins', async () => {
  const { stream } = await connected('flooding');
  changes = 0;
  const started = Date.now();
  for (let i = 1; i <= 300; i++) stream.write(ack(String(i)));
  await waitFor('the last Ack recorded', () =>
    server.nodes().find((n) => n.node === 'flooding' && n.appliedVersion === '300'),
  );
  const seconds = (Date.now() - started) / 1000;
  await settle();
  const allowed = RATE.burst + Math.ceil((seconds + 0.3) * RATE.perSecond) + 1;
  assert.ok(changes <= allowed, `${changes} changes in ${seconds} s, at most ${allowed}`);
  stream.close();
});

test('Nacks of a stale version earn at most one full resend', async () => {
  const { stream } = await connected('nacking');
  for (let i = 0; i < 50; i++) stream.write({ nack: { version: '1', nonce: '1', error: 'no' } });
  await waitFor('the Nack recorded', () =>
    server.nodes().find((n) => n.node === 'nacking' && n.lastError !== undefined),
  );
  await settle();
  assert.ok(stream.messages.length <= 2, `${stream.messages.length} messages sent`);
  stream.close();
});

test('the error text and the lists a proxy reports are capped', async () => {
  const { stream, version } = await connected('verbose');
  const huge = 'x'.repeat(200_000);
  const errors = Array.from({ length: 1000 }, (_, i) => ({ listener: `l${i}`, message: huge.slice(0, 500) }));
  errors[0] = { listener: 'l0', message: huge };
  stream.write(ack(version, errors));
  const acked = await waitFor('the Ack recorded', () =>
    server.nodes().find((n) => n.node === 'verbose' && n.appliedVersion === version),
  );
  assert.equal(acked.listenerErrors.length, MAX_REPORTED_ITEMS);
  assert.ok(Buffer.byteLength(acked.listenerErrors[0]!.message) <= MAX_REPORTED_TEXT_BYTES);
  assert.match(acked.listenerErrors[0]!.message, /…\[cut: 200000 bytes reported\]$/);

  stream.write({ nack: { version, nonce: '2', error: `é${huge}` } });
  const nacked = await waitFor('the Nack recorded', () =>
    server.nodes().find((n) => n.node === 'verbose' && n.lastError !== undefined),
  );
  assert.ok(
    Buffer.byteLength(nacked.lastError!) <= MAX_REPORTED_TEXT_BYTES,
    String(nacked.lastError?.length),
  );
  assert.match(nacked.lastError!, /^version \d+ rejected: éxxx/);
  stream.close();
});

test('an applied Gateway of the longest legal key (63-character namespace, 253-character name) is kept whole', () => {
  const longest = `${'n'.repeat(63)}/${'g'.repeat(253)}`;
  const tooLong = `${longest}x`;
  const report = ackReport({
    version: '7',
    nonce: '1',
    listenerErrors: [],
    appliedGateways: [
      { name: longest, generation: 3 },
      { name: tooLong, generation: 4 },
    ],
    rejectedResources: [],
  });
  assert.equal(report.appliedGateways[longest], 3);
  assert.equal(Buffer.byteLength(longest), MAX_GATEWAY_KEY_BYTES);
  // Past any legal key, the name is cut (and so matches no Gateway).
  assert.equal(report.appliedGateways[tooLong], undefined);
});

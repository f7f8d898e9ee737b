// /dataplane lists every tenant's fleets, pods and errors: it answers loopback (the replica's own pod, or
// kubectl port-forward) and replicas proving they hold the discovery server's key; anyone else gets 403, while
// the probes' /healthz on the same port keeps answering everyone.
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { after, before, test } from 'node:test';
import { generateCertificates } from '../../../src/certificates/certs.js';
import { discardingLogger } from '../../../src/platform/log-line.js';
import { dataPlaneRoute, peerCredential } from '../../../src/provider/kubernetes/data-plane-access.js';
import { type Endpoint, serveHttp } from '../../../src/provider/kubernetes/http-endpoints.js';
import { createPeerDataPlane, DATA_PLANE_PATH } from '../../../src/provider/kubernetes/peer-data-plane.js';
import { testCertificates } from '../../discovery/fixtures.js';
import { httpRequest } from '../../support/http.js';

const key = testCertificates().serverKeyPem;
const report = {
  identity: 'replica-1',
  nodes: [
    {
      stream: 1,
      node: 'pod-1',
      fleet: 'tenant-a/eg',
      connectedAt: '2026-01-01T00:00:00.000Z',
      appliedGateways: { 'tenant-a/eg': 1 },
      listenerErrors: [],
    },
  ],
};
// A non-loopback address of this machine: a request to it comes from it, as a peer pod's would.
const external = Object.values(networkInterfaces())
  .flat()
  .find((i) => i !== undefined && !i.internal && i.family === 'IPv4')?.address;
let endpoint: Endpoint;
let port: number;

before(async () => {
  endpoint = await serveHttp('0.0.0.0:0', 'test', {
    '/healthz': () => ({ status: 200, body: 'ok\n' }),
    [DATA_PLANE_PATH]: dataPlaneRoute(
      () => report,
      () => key,
    ),
  });
  port = Number(endpoint.address.split(':').at(-1));
});
after(() => endpoint.close());

test('loopback reads /dataplane', async () => {
  const reply = await httpRequest(port, DATA_PLANE_PATH);
  assert.equal(reply.status, 200);
  assert.deepEqual(JSON.parse(reply.body), report);
});

test('another address reads /healthz but not /dataplane without a replica credential', {
  skip: external === undefined ? 'no non-loopback IPv4 address here' : false,
}, async () => {
  assert.equal((await httpRequest(port, '/healthz', { address: external })).status, 200);
  const refused = await httpRequest(port, DATA_PLANE_PATH, { address: external });
  assert.equal(refused.status, 403);
  assert.doesNotMatch(refused.body, /tenant-a/);
  const otherKey = generateCertificates().serverKeyPem;
  for (const authorization of [
    peerCredential(otherKey),
    peerCredential(key, Date.now() - 10 * 60_000),
    'Bearer anything',
  ]) {
    const reply = await httpRequest(port, DATA_PLANE_PATH, { address: external, headers: { authorization } });
    assert.equal(reply.status, 403, authorization);
  }
});

test('a replica holding the server key polls its peer’s /dataplane', {
  skip: external === undefined ? 'no non-loopback IPv4 address here' : false,
}, async () => {
  let changed = false;
  const peers = createPeerDataPlane({
    identity: 'replica-2',
    peers: () => [`${external}:${port}`],
    onChange: () => {
      changed = true;
    },
    log: discardingLogger,
    credential: () => peerCredential(key),
    intervalMs: 20,
  });
  peers.start();
  try {
    const deadline = Date.now() + 5_000;
    while (!changed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(
      peers.nodes().map((n) => n.node),
      ['pod-1'],
    );
  } finally {
    peers.stop();
  }
});

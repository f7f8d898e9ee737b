import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import type { EndpointSlice } from '../../../src/api/core.js';
import type { NodeState } from '../../../src/discovery/server.js';
import type { FleetConfig } from '../../../src/ir/fleet-config.js';
import { createLogger, discardingLogger } from '../../../src/platform/log-line.js';
import {
  createPeerDataPlane,
  DATA_PLANE_PATH,
  type DataPlaneReport,
  parseDataPlaneReport,
  replicaAddresses,
} from '../../../src/provider/kubernetes/peer-data-plane.js';
import {
  recordedProgrammedGeneration,
  withRecordedProgrammed,
} from '../../../src/provider/kubernetes/recorded-programmed.js';
import type { DataPlaneState } from '../../../src/translate/index.js';

function node(name: string, generation: number): NodeState {
  return {
    stream: 1,
    node: name,
    fleet: 'team/gw',
    connectedAt: '2026-01-01T00:00:00.000Z',
    appliedVersion: '3',
    appliedGateways: { 'team/gw': generation },
    listenerErrors: [{ listener: 'http-80', message: 'bind failed' }],
  };
}

const servers: Server[] = [];
after(() => {
  for (const s of servers) s.close();
});

/** A replica's HTTP endpoint answering with whatever `report()` gives at the time. */
async function replica(report: () => DataPlaneReport): Promise<string> {
  const server = createServer((req, res) => {
    if (req.url !== DATA_PLANE_PATH) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(report()));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return address;
}

test('data plane reports: nodes round-trip; a malformed report names what is wrong', () => {
  const report: DataPlaneReport = { identity: 'ctl-1', nodes: [node('proxy-1', 2)] };
  assert.deepEqual(parseDataPlaneReport(JSON.stringify(report)), report);
  assert.throws(() => parseDataPlaneReport('{"nodes": []}'), /expected \{identity, nodes\[\]\}/);
  assert.throws(
    () => parseDataPlaneReport('{"identity": "x", "nodes": [{"node": "p"}]}'),
    /nodes\[0\]: expected \{node, fleet, appliedGateways\}/,
  );
  assert.throws(() => parseDataPlaneReport('not json'));
});

test('the leader polls its peers: skips itself, counts what peers report, drops unreachable peers', async () => {
  let peerNodes = [node('proxy-1', 2)];
  const self = await replica(() => ({ identity: 'ctl-self', nodes: [node('own-proxy', 9)] }));
  const peer = await replica(() => ({ identity: 'ctl-peer', nodes: peerNodes }));
  const gone = await closedPort();
  const logs: string[] = [];
  let changes = 0;
  const peers = createPeerDataPlane({
    identity: 'ctl-self',
    peers: () => [self, peer, gone],
    onChange: () => {
      changes++;
    },
    log: createLogger('debug', (line) => logs.push(line)),
    credential: () => 'Portico-Peer 0.0',
    intervalMs: 20,
  });
  peers.start();
  try {
    await waitFor(() => changes >= 1);
    assert.deepEqual(peers.nodes(), [node('proxy-1', 2)], 'only the peer’s nodes, not our own');
    assert.equal(logs.filter((l) => l.includes(gone)).length, 1, 'an unreachable peer is logged once');

    peerNodes = [node('proxy-1', 3), node('proxy-2', 3)];
    await waitFor(() => peers.nodes().length === 2);
    assert.deepEqual(
      peers.nodes().map((n) => n.appliedGateways['team/gw']),
      [3, 3],
    );
    assert.equal(changes, 2);
  } finally {
    peers.stop();
  }
  assert.deepEqual(peers.nodes(), [], 'a replica that stopped leading forgets its peers’ nodes');
});

test('a peer that misses a few polls keeps its last report; one that stays silent or leaves loses it', async () => {
  let answering = true;
  const server = createServer((_req, res) => {
    // A failed poll: the answer is not a report (as a replica in trouble might give).
    if (!answering) res.writeHead(503).end();
    else res.writeHead(200).end(JSON.stringify({ identity: 'ctl-peer', nodes: [node('proxy-1', 2)] }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  let listed = [address];
  let polls = 0;
  let changes = 0;
  const peers = createPeerDataPlane({
    identity: 'ctl-self',
    peers: () => {
      polls++;
      return listed;
    },
    onChange: () => {
      changes++;
    },
    log: discardingLogger,
    credential: () => 'Portico-Peer 0.0',
    intervalMs: 10,
    keepReportPolls: 3,
  });
  peers.start();
  try {
    await waitFor(() => peers.nodes().length === 1);
    answering = false;
    const from = polls;
    // Three failed polls in a row keep the report; the fourth drops it (polls counts each poll's start).
    await waitFor(() => peers.nodes().length === 0);
    assert.ok(polls - from >= 4, `report dropped after ${polls - from} polls`);

    answering = true;
    await waitFor(() => peers.nodes().length === 1);
    const before = changes;
    // A peer that leaves the list is forgotten at the next poll, without an allowance.
    listed = [];
    await waitFor(() => peers.nodes().length === 0);
    assert.equal(changes, before + 1);
  } finally {
    peers.stop();
  }
});

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check(), 'condition reached');
}

function gatewayObject(generation: number, programmed: string, observedGeneration: number) {
  return {
    metadata: { name: 'gw', namespace: 'team', generation },
    status: { conditions: [{ type: 'Programmed', status: programmed, observedGeneration }] },
  };
}

test('a stored Programmed=True at the current generation counts as applied; anything else does not', () => {
  assert.equal(recordedProgrammedGeneration(gatewayObject(4, 'True', 4)), 4);
  assert.equal(recordedProgrammedGeneration(gatewayObject(5, 'True', 4)), undefined, 'older generation');
  assert.equal(recordedProgrammedGeneration(gatewayObject(4, 'False', 4)), undefined);
  assert.equal(recordedProgrammedGeneration({ metadata: { generation: 1 } }), undefined);
  assert.equal(recordedProgrammedGeneration(undefined), undefined);

  const fleets = [
    { fleet: 'team/gw', gateways: [{ name: 'team/gw', generation: 4 }] },
    { fleet: 'other/gw', gateways: [{ name: 'other/gw', generation: 7 }] },
  ] as unknown as FleetConfig[];
  const state: DataPlaneState = {
    fleets: {
      'team/gw': { addresses: [], appliedGateways: {}, listenerErrors: [] },
      'other/gw': { addresses: [], appliedGateways: { 'other/gw': 7 }, listenerErrors: [] },
    },
  };
  const objects: Record<string, ReturnType<typeof gatewayObject>> = {
    'team/gw': gatewayObject(4, 'True', 4),
    'other/gw': gatewayObject(7, 'True', 6),
  };
  const out = withRecordedProgrammed(state, fleets, (key) => objects[key]);
  assert.deepEqual(out.fleets['team/gw']?.appliedGateways, { 'team/gw': 4 });
  assert.equal(out.fleets['other/gw'], state.fleets['other/gw'], 'a fleet with nothing recorded is kept');
  assert.deepEqual(state.fleets['team/gw']?.appliedGateways, {}, 'the input is not changed');
});

function slice(namespace: string, service: string, ips: [string, boolean | undefined][]): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${service}-x`,
      namespace,
      generation: 1,
      labels: { 'kubernetes.io/service-name': service },
    },
    addressType: 'IPv4',
    endpoints: ips.map(([ip, ready]) => ({
      addresses: [ip],
      conditions: ready === undefined ? {} : { ready },
    })),
    ports: [
      { name: 'grpc-discovery', port: 18000, protocol: 'TCP' },
      { name: 'http', port: 18001, protocol: 'TCP' },
    ],
  };
}

test('peers are the ready endpoints of the controller Service, on its http port', () => {
  const endpointSlices = [
    slice('sys', 'portico-gateway', [
      ['10.0.0.1', true],
      ['10.0.0.2', false],
      ['fd00::3', undefined],
    ]),
    slice('sys', 'portico-gateway-metrics', [['10.0.0.9', true]]),
    slice('other', 'portico-gateway', [['10.0.1.1', true]]),
  ];
  assert.deepEqual(replicaAddresses({ endpointSlices }, 'sys'), ['10.0.0.1:18001', '[fd00::3]:18001']);
});

// One fleet's refused infrastructure is that fleet's problem alone: the API server refusing a Service (a quota,
// an admission policy) or not answering gives that fleet's Gateways the API server's reason, every other fleet
// is still applied, and the refused fleet is retried on its own backoff, at once when what it wants changes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { COMMON_INFRA_LABELS, type FleetInfra } from '../../../src/ir/fleet-infra.js';
import { discardingLogger } from '../../../src/platform/log-line.js';
import type { ApiClient, ApiReply } from '../../../src/provider/kubernetes/api-client.js';
import { createInfraApplier, type InfraApplier } from '../../../src/provider/kubernetes/infra-applier.js';
import { createFakeKubernetesApi, type FakeAnswer } from '../../support/fake-kubernetes-api.js';
import { manualTimers } from '../../support/manual-timers.js';

function fleetOf(namespace: string, gateway: string, port = 80): FleetInfra {
  return {
    fleet: `${namespace}/${gateway}`,
    name: `proxy-${namespace}-${gateway}-0000abcd`,
    namespace,
    labels: {
      ...COMMON_INFRA_LABELS,
      'gateway.portico.io/owning-gateway-namespace': namespace,
      'gateway.portico.io/owning-gateway-name': gateway,
    },
    propagated: { labels: {}, annotations: {} },
    gateways: [`${namespace}/${gateway}`],
    ports: [{ name: `http-${port}`, port, protocol: 'TCP', containerPort: 10000 + port }],
  };
}

const QUOTA_REFUSAL: ApiReply = {
  status: 403,
  body: {
    kind: 'Status',
    status: 'Failure',
    reason: 'Forbidden',
    code: 403,
    message:
      'services "proxy-tenant-a-gw-0000abcd" is forbidden: exceeded quota: no-services, requested: services=1, used: services=0, limited: services=0',
  },
};

interface FakeApiServer {
  objects: Map<string, unknown>;
  /** The writes the server took (not those `refuse` answered), as `METHOD path`. */
  writes: string[];
  /** A write's answer instead of success ('hang': none ever), while it returns one. */
  refuse: (method: string, path: string) => FakeAnswer;
  client: ApiClient;
}

/** An API server that holds what is applied; `refuse` answers a write instead, while it returns a reply. */
function fakeApiServer(): FakeApiServer {
  const api = createFakeKubernetesApi();
  const server: FakeApiServer = {
    objects: api.objects,
    writes: [],
    refuse: () => undefined,
    client: api.client,
  };
  api.answer = (request) => {
    if (request.method === 'GET') return undefined;
    const refused = server.refuse(request.method, request.bare);
    if (refused === undefined) server.writes.push(`${request.method} ${request.bare}`);
    return refused;
  };
  return server;
}

function applierFor(server: FakeApiServer, timers: ReturnType<typeof manualTimers>) {
  let wakes = 0;
  const applier: InfraApplier = createInfraApplier({
    client: server.client,
    proxy: { image: 'portico:test' },
    controllerNamespace: 'portico-gateway-system',
    deployType: 'GatewayNamespace',
    caPem: 'ca',
    backoff: { firstMs: 2000, maxMs: 300_000 },
    now: timers.now,
    setTimer: timers.setTimer,
    onProblemsChanged: () => {
      wakes++;
    },
    log: discardingLogger,
  });
  return { applier, wakes: () => wakes };
}

const serviceOf = (f: FleetInfra) => `/api/v1/namespaces/${f.namespace}/services/${f.name}`;
const deploymentOf = (f: FleetInfra) => `/apis/apps/v1/namespaces/${f.namespace}/deployments/${f.name}`;

/** A sync, its work done, and the problems a pass after it reports. */
async function settled(applier: InfraApplier, fleets: FleetInfra[]) {
  await applier.sync(fleets);
  await applier.idle();
  return applier.sync(fleets);
}

test('a Service refused by a quota is its Gateway’s problem, with the API server’s reason; fleets after it are applied', async () => {
  const server = fakeApiServer();
  const timers = manualTimers();
  const a = fleetOf('tenant-a', 'gw');
  const b = fleetOf('tenant-b', 'gw');
  const c = fleetOf('tenant-c', 'gw');
  server.refuse = (method, path) => (method === 'PATCH' && path === serviceOf(a) ? QUOTA_REFUSAL : undefined);
  const { applier, wakes } = applierFor(server, timers);
  const problems = await settled(applier, [a, b, c]);
  assert.deepEqual([...problems.keys()], ['tenant-a/gw']);
  assert.equal(problems.get('tenant-a/gw')?.reason, 'Forbidden');
  assert.match(
    problems.get('tenant-a/gw')?.message ?? '',
    /^apply Service tenant-a\/proxy-tenant-a-gw-0000abcd: HTTP 403: .*exceeded quota: no-services/,
  );
  assert.ok(!server.objects.has(deploymentOf(a)), 'no pods for a fleet whose Service is refused');
  for (const f of [b, c]) assert.ok(server.objects.has(serviceOf(f)) && server.objects.has(deploymentOf(f)));
  assert.equal(wakes(), 1, 'the problem woke one pass');
  applier.stop();
});

test('the refused fleet is retried on its own backoff, doubling, and programmed once the quota goes', async () => {
  const server = fakeApiServer();
  const timers = manualTimers();
  const a = fleetOf('tenant-a', 'gw');
  const b = fleetOf('tenant-b', 'gw');
  let refusals = 0;
  let quota = true;
  server.refuse = (method, path) => {
    if (!(quota && method === 'PATCH' && path === serviceOf(a))) return undefined;
    refusals++;
    return QUOTA_REFUSAL;
  };
  const { applier, wakes } = applierFor(server, timers);
  await settled(applier, [a, b]);
  const writesOfB = server.writes.filter((w) => w.includes('tenant-b')).length;
  // Passes while it waits (another tenant's edits, Acks) do not try it again.
  for (let i = 0; i < 5; i++) await settled(applier, [a, b]);
  assert.equal(refusals, 1);
  assert.deepEqual(timers.waits(), [2000]);
  timers.next();
  await applier.idle();
  assert.equal(refusals, 2);
  assert.deepEqual(timers.waits(), [4000]);
  timers.next();
  await applier.idle();
  assert.deepEqual(timers.waits(), [8000]);
  assert.equal(
    server.writes.filter((w) => w.includes('tenant-b')).length,
    writesOfB,
    'nothing of B rewritten',
  );
  quota = false;
  timers.next();
  await applier.idle();
  assert.ok(server.objects.has(serviceOf(a)));
  assert.deepEqual([...(await applier.sync([a, b])).keys()], []);
  assert.deepEqual(timers.waits(), []);
  assert.equal(wakes(), 2, 'one pass when the problem came, one when it went');
  applier.stop();
});

test('the backoff is capped, and a change to the refused fleet is tried at once', async () => {
  const server = fakeApiServer();
  const timers = manualTimers();
  const a = fleetOf('tenant-a', 'gw');
  server.refuse = (method, path) => (method === 'PATCH' && path === serviceOf(a) ? QUOTA_REFUSAL : undefined);
  const { applier } = applierFor(server, timers);
  await settled(applier, [a]);
  for (let i = 0; i < 12; i++) {
    timers.next();
    await applier.idle();
  }
  assert.deepEqual(timers.waits(), [300_000]);
  const edited = fleetOf('tenant-a', 'gw', 8080);
  let tried = false;
  server.refuse = (method, path) => {
    if (method === 'PATCH' && path === serviceOf(a)) tried = true;
    return undefined;
  };
  const problems = await settled(applier, [edited]);
  assert.ok(tried, 'tried without waiting for the retry');
  assert.deepEqual([...problems.keys()], []);
  applier.stop();
});

test('an API server that does not answer one fleet’s write holds that fleet only', async () => {
  const server = fakeApiServer();
  const timers = manualTimers();
  const fleets = ['a', 'b', 'c', 'd', 'e', 'f'].map((t) => fleetOf(`tenant-${t}`, 'gw'));
  const hung = fleets[0]!;
  server.refuse = (method, path) => (method === 'PATCH' && path === serviceOf(hung) ? 'hang' : undefined);
  const { applier } = applierFor(server, timers);
  await applier.sync(fleets);
  // Every other fleet completes while the first one's request never returns.
  for (let i = 0; i < 50 && !fleets.slice(1).every((f) => server.objects.has(deploymentOf(f))); i++) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  for (const f of fleets.slice(1)) assert.ok(server.objects.has(deploymentOf(f)), f.fleet);
  assert.ok(!server.objects.has(deploymentOf(hung)));
  applier.stop();
});

test('a deletion the API server refuses is retried; the fleet’s objects go once it answers', async () => {
  const server = fakeApiServer();
  const timers = manualTimers();
  const a = fleetOf('tenant-a', 'gw');
  const b = fleetOf('tenant-b', 'gw');
  const { applier } = applierFor(server, timers);
  await settled(applier, [a, b]);
  server.refuse = (method) =>
    method === 'DELETE'
      ? { status: 500, body: { kind: 'Status', reason: 'InternalError', message: 'etcd' } }
      : undefined;
  await settled(applier, [b]);
  assert.ok(server.objects.has(deploymentOf(a)));
  assert.deepEqual(timers.waits(), [2000]);
  server.refuse = () => undefined;
  timers.next();
  await applier.idle();
  assert.ok(!server.objects.has(deploymentOf(a)) && !server.objects.has(serviceOf(a)));
  assert.ok(server.objects.has(deploymentOf(b)));
  applier.stop();
});

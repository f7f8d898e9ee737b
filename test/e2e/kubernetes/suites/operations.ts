// What an operator relies on, end to end: the controller's health, readiness and metrics endpoints, the proxies'
// request metrics, an unmanaged object of an infrastructure name left alone, another controller's class ignored,
// and a quiet log while fleets start and backends scale to zero and back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import { COMMON_INFRA_LABELS, fleetInfraName } from '../../../../src/ir/fleet-infra.js';
import { splitLogLevel } from '../../../../src/platform/log-line.js';
import { DATA_PLANE_PATH } from '../../../../src/provider/kubernetes/peer-data-plane.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually, type Loose } from '../../../cluster/kube-api.js';
import { httpRequest, type Reply } from '../../../support/http.js';
import { parsePrometheus, sampleValue } from '../../../support/prometheus.js';
import { replicaCredential } from '../handover.js';
import { E2E_SKIP } from '../install.js';
import {
  condition,
  controllerMetrics,
  echoBackend,
  echoNamespace,
  gateway,
  gatewayClass,
  gatewayStatus,
  get,
  programmedAddress,
  route,
  served,
  smallProxies,
} from '../traffic.js';

const CONTROLLER = DEFAULT_CONTROLLER_NAME;
const HEALTH_PORT = 18001;
const METRICS_PORT = 19001;
const NS = 'ops';
let cluster: Cluster;
let system: string;

/** Runs in the file's before(), once Portico is installed in `sys`. */
export async function setup(c: Cluster, sys: string): Promise<void> {
  cluster = c;
  system = sys;
  await echoNamespace(cluster, NS);
  await gatewayClass(cluster, 'portico', CONTROLLER);
  await smallProxies(cluster, NS, 'small');
}

function httpGet(address: string, port: number, path: string): Promise<Reply> {
  return httpRequest(port, path, { address, host: address, timeoutMs: 5000 });
}

async function clusterIP(namespace: string, service: string): Promise<string> {
  const r = await call(cluster, 'GET', `/api/v1/namespaces/${namespace}/services/${service}`);
  assert.equal(r.status, 200, `Service ${namespace}/${service}`);
  return String(r.body.spec?.clusterIP);
}

/** Running pods (not being deleted) matching the label selector, in the controller namespace. */
async function pods(selector: string): Promise<Loose[]> {
  const r = await call(
    cluster,
    'GET',
    `/api/v1/namespaces/${system}/pods?labelSelector=${encodeURIComponent(selector)}`,
  );
  return asList(r.body.items).filter(
    (p) => p.metadata?.deletionTimestamp === undefined && p.status?.phase === 'Running',
  );
}

const PROXY_PODS = `app.kubernetes.io/name=${COMMON_INFRA_LABELS['app.kubernetes.io/name']}`;

test('the controller answers /healthz and /readyz on 18001 through its Service and its pod IP', {
  skip: E2E_SKIP,
}, async () => {
  const [controller] = await pods('app.kubernetes.io/component=controller');
  assert.ok(controller !== undefined, 'a running controller pod');
  const podIP = String(controller.status?.podIP);
  for (const address of [await clusterIP(system, 'portico-gateway'), podIP]) {
    for (const path of ['/healthz', '/readyz']) {
      const reply = await httpGet(address, HEALTH_PORT, path);
      assert.equal(reply.status, 200, `${address}:${HEALTH_PORT}${path}: ${reply.body}`);
    }
    assert.equal((await httpGet(address, HEALTH_PORT, '/nothing-here')).status, 404);
  }
  // The metrics endpoint answers on the pod IP too, the same text as through its Service.
  const direct = await httpGet(podIP, METRICS_PORT, '/metrics');
  assert.equal(direct.status, 200);
  assert.ok(sampleValue(parsePrometheus(direct.body), 'portico_reconciles_total')! >= 1);
});

test('/dataplane answers the pod’s loopback and the replicas, and refuses everyone else; the probes still answer', {
  skip: E2E_SKIP,
}, async () => {
  const [controller] = await pods('app.kubernetes.io/component=controller');
  assert.ok(controller !== undefined, 'a running controller pod');
  const podIP = String(controller.status?.podIP);
  for (const address of [await clusterIP(system, 'portico-gateway'), podIP]) {
    const refused = await httpGet(address, HEALTH_PORT, DATA_PLANE_PATH);
    assert.equal(refused.status, 403, `${address}: ${refused.body}`);
    assert.equal((await httpGet(address, HEALTH_PORT, '/healthz')).status, 200);
  }
  const authorization = await replicaCredential(cluster, system);
  const peer = await httpRequest(HEALTH_PORT, DATA_PLANE_PATH, {
    address: podIP,
    timeoutMs: 5000,
    headers: { authorization },
  });
  assert.equal(peer.status, 200, peer.body);
  // From inside the pod (as kubectl port-forward is): loopback reads it without a credential.
  const inside = cluster.kubectl([
    'exec',
    '-n',
    system,
    String(controller.metadata?.name),
    '-c',
    String(asList(controller.spec?.containers)[0]?.name),
    '--',
    'node',
    '-e',
    `fetch('http://127.0.0.1:${HEALTH_PORT}${DATA_PLANE_PATH}').then((r) => console.log(r.status))`,
  ]);
  assert.equal(inside.trim(), '200');
});

test('controller metrics count reconciles, translation time, status writes, proxies and config versions', {
  skip: E2E_SKIP,
}, async () => {
  const before = await controllerMetrics(cluster, system);
  for (const name of [
    'portico_reconciles_total',
    'portico_translate_seconds_sum',
    'portico_translate_seconds_count',
    'portico_status_writes_total',
    'portico_connected_proxies',
  ]) {
    assert.notEqual(sampleValue(before, name), undefined, `${name} is exported`);
  }
  assert.equal(sampleValue(before, 'portico_fleet_config_version', { fleet: `${NS}/web` }), undefined);

  await gateway(cluster, NS, 'web', 'portico', [{ name: 'http', port: 80 }]);
  await route(cluster, NS, 'site', { namespace: NS, name: 'web' }, 'site.example.com', 'echo');
  const address = await programmedAddress(cluster, NS, 'web');
  await served(address, 80, 'site.example.com');

  const proxies = await pods(PROXY_PODS);
  assert.ok(proxies.length >= 1);
  // The gauge follows discovery connections: every proxy pod of every fleet is connected.
  const afterGateway = await eventually(async () => {
    const m = await controllerMetrics(cluster, system);
    return sampleValue(m, 'portico_connected_proxies') === proxies.length ? m : undefined;
  }, `portico_connected_proxies = ${proxies.length}`);
  const reconciles = sampleValue(afterGateway, 'portico_reconciles_total')!;
  assert.ok(reconciles > sampleValue(before, 'portico_reconciles_total')!);
  assert.equal(sampleValue(afterGateway, 'portico_translate_seconds_count'), reconciles);
  assert.ok(
    sampleValue(afterGateway, 'portico_translate_seconds_sum')! >
      sampleValue(before, 'portico_translate_seconds_sum')!,
  );
  assert.ok(
    sampleValue(afterGateway, 'portico_status_writes_total')! >
      sampleValue(before, 'portico_status_writes_total')!,
  );
  const version = sampleValue(afterGateway, 'portico_fleet_config_version', { fleet: `${NS}/web` });
  assert.ok(version !== undefined && version >= 1, `config version ${version}`);

  // An edit that changes the fleet's config: a new version, more reconciles.
  await route(cluster, NS, 'site', { namespace: NS, name: 'web' }, 'www.example.com', 'echo');
  await served(address, 80, 'www.example.com');
  const afterEdit = await eventually(async () => {
    const m = await controllerMetrics(cluster, system);
    const v = sampleValue(m, 'portico_fleet_config_version', { fleet: `${NS}/web` });
    return v !== undefined && v > version ? m : undefined;
  }, 'a new config version after the route edit');
  assert.ok(sampleValue(afterEdit, 'portico_reconciles_total')! > reconciles);
});

test('a proxy pod counts requests by listener, route and status code on 19001', {
  skip: E2E_SKIP,
}, async () => {
  const address = await programmedAddress(cluster, NS, 'web');
  await served(address, 80, 'www.example.com');
  const proxies = await pods(
    `gateway.portico.io/owning-gateway-namespace=${NS},gateway.portico.io/owning-gateway-name=web`,
  );
  // One replica, so that pod sees every request sent through the Service.
  assert.equal(proxies.length, 1, 'one running proxy pod of ops/web');
  const proxyIP = String(proxies[0]!.status?.podIP);
  const scrape = async () => {
    const reply = await httpGet(proxyIP, METRICS_PORT, '/metrics');
    assert.equal(reply.status, 200);
    return parsePrometheus(reply.body);
  };
  const ok = { listener: 'port-80', route: `${NS}/site/rule/0/match/0`, code: '200' };
  const notFound = { listener: 'port-80', route: '-', code: '404' };
  const first = await scrape();
  const okBefore = sampleValue(first, 'portico_requests_total', ok) ?? 0;
  const notFoundBefore = sampleValue(first, 'portico_requests_total', notFound) ?? 0;
  for (let i = 0; i < 5; i++)
    assert.equal((await get(address, 80, 'www.example.com', `/n/${i}`)).status, 200);
  assert.equal((await get(address, 80, 'nobody.example.com')).status, 404);
  // A request is counted when its response closes on the proxy's side, just after the client has read it.
  const after = await eventually(async () => {
    const m = await scrape();
    return sampleValue(m, 'portico_requests_total', notFound) === notFoundBefore + 1 &&
      sampleValue(m, 'portico_requests_total', ok) === okBefore + 5
      ? m
      : undefined;
  }, 'five 200s on the route and one 404 counted');
  assert.ok(
    sampleValue(after, 'portico_request_duration_seconds_count', { route: ok.route })! >= okBefore + 5,
  );
});

const GATEWAYS = `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/gateways`;

test('an unmanaged Service with the fleet’s name is left alone and reported; once deleted Portico creates its own', {
  skip: E2E_SKIP,
}, async () => {
  const name = fleetInfraName(`${NS}/taken`);
  const path = `/api/v1/namespaces/${system}/services/${name}`;
  const created = await call(
    cluster,
    'POST',
    `/api/v1/namespaces/${system}/services?fieldManager=someone-else`,
    {
      metadata: { name, labels: { team: 'someone-else' } },
      spec: { selector: { app: 'someone-else' }, ports: [{ name: 'web', port: 8000, targetPort: 8000 }] },
    },
  );
  assert.equal(created.status, 201, JSON.stringify(created.body));

  await gateway(cluster, NS, 'taken', 'portico', [{ name: 'http', port: 80 }]);
  const programmed = await eventually(async () => {
    const c = condition(await gatewayStatus(cluster, NS, 'taken'), 'Programmed');
    return c?.status === 'False' && String(c.message).includes(name) ? c : undefined;
  }, 'Gateway ops/taken Programmed=False naming the unmanaged Service');
  assert.equal(programmed.reason, 'Invalid');
  assert.match(String(programmed.message), /already exists and is not managed by portico-gateway/);
  const gw = await gatewayStatus(cluster, NS, 'taken');
  assert.equal(programmed.observedGeneration, gw.metadata?.generation);

  const untouched = await call(cluster, 'GET', path);
  assert.equal(untouched.body.metadata?.resourceVersion, created.body.metadata?.resourceVersion);
  assert.deepEqual(untouched.body.spec, created.body.spec);
  assert.deepEqual(untouched.body.metadata?.labels, { team: 'someone-else' });
  assert.deepEqual(untouched.body.metadata?.managedFields, created.body.metadata?.managedFields);

  assert.equal((await call(cluster, 'DELETE', path)).status, 200);
  const address = await programmedAddress(cluster, NS, 'taken');
  const ours = await call(cluster, 'GET', path);
  assert.equal(ours.status, 200);
  assert.notEqual(ours.body.metadata?.uid, created.body.metadata?.uid);
  assert.equal(ours.body.metadata?.labels?.['app.kubernetes.io/managed-by'], 'portico-gateway');
  assert.equal(ours.body.metadata?.labels?.['gateway.portico.io/owning-gateway-name'], 'taken');
  assert.equal(ours.body.spec?.type, 'LoadBalancer');
  assert.equal(String(asList(ours.body.status?.loadBalancer?.ingress)[0]?.ip), address);
  // Programmed can come before the new Service's endpoints are ready (the connection is reset until then).
  await eventually(
    async () => ((await get(address, 80, 'anything.example.com')).status === 404 ? true : undefined),
    'the proxy answering through the new Service',
  );
});

test('a Gateway of another controller’s class gets no status and no infrastructure', {
  skip: E2E_SKIP,
}, async () => {
  await gatewayClass(cluster, 'elsewhere', 'example.com/another-controller');
  await gateway(cluster, NS, 'foreign', 'elsewhere', [{ name: 'http', port: 80 }]);
  // A barrier: a later change to one of our Gateways is reconciled, so the foreign one was seen too.
  await gateway(cluster, NS, 'web', 'portico', [
    { name: 'http', port: 80 },
    { name: 'alt', port: 8080 },
  ]);
  await eventually(async () => {
    const gw = await gatewayStatus(cluster, NS, 'web');
    const c = condition(gw, 'Programmed');
    return c?.status === 'True' && c.observedGeneration === gw.metadata?.generation ? true : undefined;
  }, 'Gateway ops/web Programmed at its new generation');

  // The foreign objects keep the status their CRDs default (Unknown, "Waiting for controller"): Portico wrote none.
  const foreign = await call(cluster, 'GET', `${GATEWAYS}/foreign`);
  for (const type of ['Accepted', 'Programmed']) {
    assert.equal(
      condition(foreign.body, type)?.reason,
      'Pending',
      `foreign Gateway ${type} left as defaulted`,
    );
  }
  assert.equal(foreign.body.status?.addresses, undefined);
  assert.equal(foreign.body.status?.listeners, undefined);
  const managers = asList(foreign.body.metadata?.managedFields).map((f) => String(f.manager));
  assert.deepEqual(managers, ['e2e'], 'only the test wrote the foreign Gateway');
  const cls = await call(cluster, 'GET', '/apis/gateway.networking.k8s.io/v1/gatewayclasses/elsewhere');
  assert.equal(condition(cls.body, 'Accepted')?.reason, 'Pending', 'foreign GatewayClass left as defaulted');
  assert.equal(cls.body.status?.supportedFeatures, undefined);

  const name = fleetInfraName(`${NS}/foreign`);
  for (const [api, resource] of [
    ['/api/v1', 'services'],
    ['/apis/apps/v1', 'deployments'],
    ['/api/v1', 'serviceaccounts'],
  ] as const) {
    for (const namespace of [system, NS]) {
      const r = await call(cluster, 'GET', `${api}/namespaces/${namespace}/${resource}/${name}`);
      assert.equal(r.status, 404, `${resource} ${namespace}/${name}`);
    }
    const labelled = await call(
      cluster,
      'GET',
      `${api}/${resource}?labelSelector=${encodeURIComponent('gateway.portico.io/owning-gateway-name=foreign')}`,
    );
    assert.deepEqual(asList(labelled.body.items), [], `no ${resource} labelled for the foreign Gateway`);
  }
});

/** The controller's log lines since `since` (RFC 3339), all of them. */
function controllerLogSince(since: string): string[] {
  const text = cluster.kubectl([
    'logs',
    '-n',
    system,
    '-l',
    'app.kubernetes.io/component=controller',
    '--tail=-1',
    `--since-time=${since}`,
  ]);
  return text.split('\n').filter((line) => line !== '');
}

async function scale(namespace: string, deployment: string, replicas: number): Promise<void> {
  const r = await call(
    cluster,
    'PATCH',
    `/apis/apps/v1/namespaces/${namespace}/deployments/${deployment}/scale`,
    { spec: { replicas } },
    { contentType: 'application/merge-patch+json' },
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

test('a fresh fleet starting and a Service scaled to zero and back log no error and no invalid object', {
  skip: E2E_SKIP,
}, async () => {
  const since = new Date().toISOString();
  // A new fleet: its Service's first EndpointSlice comes before any proxy is ready (endpoints: null).
  await echoBackend(cluster, NS, 'scaled');
  // Small proxies: this test comes late in the file, when the node's CPU requests are nearly all taken.
  await gateway(cluster, NS, 'fresh', 'portico', [{ name: 'http', port: 80 }], 'small');
  await route(cluster, NS, 'scaled', { namespace: NS, name: 'fresh' }, 'scaled.example.com', 'scaled');
  const address = await programmedAddress(cluster, NS, 'fresh');
  await served(address, 80, 'scaled.example.com');

  // No ready endpoint: the slice is served with no endpoints, and the proxy answers 503.
  await scale(NS, 'scaled', 0);
  await eventually(
    async () => ((await get(address, 80, 'scaled.example.com')).status === 503 ? true : undefined),
    'scaled.example.com answering 503 with no endpoints',
    60_000,
  );
  await scale(NS, 'scaled', 1);
  await served(address, 80, 'scaled.example.com');

  const lines = controllerLogSince(since);
  assert.ok(lines.length > 0, 'the controller logged since the test began');
  assert.deepEqual(
    lines.filter((line) => splitLogLevel(line).level === 'error' || /invalid object/.test(line)),
    [],
  );
  const removed = await call(cluster, 'DELETE', `${GATEWAYS}/fresh`);
  assert.equal(removed.status, 200, JSON.stringify(removed.body));
});

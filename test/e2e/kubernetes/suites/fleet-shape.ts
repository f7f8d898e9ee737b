// A fleet shaped by DataPlaneProxies on the real cluster, in either namespace mode (one fleet for every check):
// the class's parameters with the Gateway's own laid over them, visible on each generated object; an autoscaler
// that sets the replicas while the controller leaves them alone; a resources change and a Deployment → DaemonSet
// switch and back under traffic with no failed request; a disruption budget refusing a second eviction, then
// removed; access log lines and a trace for real requests; a broken Gateway reference reported while the fleet
// keeps serving; and the Service turned ClusterIP, then NodePort, in place.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { type TestContext, test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import { type DeployType, fleetInfraName } from '../../../../src/ir/fleet-infra.js';
import { FIELD_MANAGER } from '../../../../src/ir/well-known.js';
import type { Cluster } from '../../../cluster/harness.js';
import { apply as applyObject, asList, call, eventually, type Loose } from '../../../cluster/kube-api.js';
import { httpRequest, type Reply } from '../../../support/http.js';
import { attributeOf } from '../../../support/otlp-collector.js';
import {
  appliesSpecField,
  assertExitedOnTheirOwn,
  evict,
  type FleetPlace,
  fleetObject,
  fleetPods,
  podOwnerKind,
  recordExits,
  recordReplicas,
  stepTimer,
} from '../fleet-objects.js';
import { assertNoFailedRequests, duringTraffic } from '../handover.js';
import { E2E_SKIP, trackClusterObject } from '../install.js';
import { otlpReceiver, receivedSpans } from '../otlp-receiver.js';
import {
  applyGatewayParameters,
  applyShapedGateway,
  assertPodTemplate,
  assertPropagated,
  CLASS_PARAMETERS,
  classParameters,
  container,
  flagValue,
  GATEWAY,
  GATEWAY_PARAMETERS,
  type GatewayParams,
  HOST,
  type ShapedFleet,
  SOURCE_RANGES,
} from '../shaped-fleet.js';
import {
  apply,
  condition,
  echoNamespace,
  gatewayClass,
  gatewayStatus,
  get,
  programmedAddress,
  route,
  served,
} from '../traffic.js';

// Bound for a rollout, a switch or a status to follow an edit: the serial phase shares 2 cores.
const LOADED_MACHINE_MS = 120_000;

let shape: ShapedFleet;
// The parts of `shape` every test uses.
let cluster: Cluster;
let ns: string;
let fleet: FleetPlace;
let address: string;

const FIRST: GatewayParams = { drainSeconds: 20 };
let current: GatewayParams = FIRST;

/** Runs in the file's before(), once Portico is installed in `sys`: the fleet starts while other suites set up. */
export async function setup(
  c: Cluster,
  sys: string,
  type: DeployType = 'ControllerNamespace',
): Promise<void> {
  const suffix = type === 'GatewayNamespace' ? 'gwns' : 'cns';
  cluster = c;
  ns = `shape-${suffix}`;
  fleet = {
    namespace: type === 'GatewayNamespace' ? ns : sys,
    name: fleetInfraName(`${ns}/${GATEWAY}`),
    selector: `gateway.portico.io/owning-gateway-namespace=${ns},gateway.portico.io/owning-gateway-name=${GATEWAY}`,
  };
  const nodes = await call(cluster, 'GET', '/api/v1/nodes');
  await echoNamespace(cluster, ns);
  shape = {
    cluster,
    system: sys,
    deployType: type,
    ns,
    className: `shape-${suffix}`,
    priorityClass: `portico-e2e-shape-${suffix}`,
    nodeArch: String(asList(nodes.body.items)[0]?.metadata?.labels?.['kubernetes.io/arch']),
    tracesUrl: await otlpReceiver(cluster, ns, 'otlp'),
  };
  trackClusterObject(`/apis/scheduling.k8s.io/v1/priorityclasses/${shape.priorityClass}`);
  await applyObject(
    cluster,
    {
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: shape.priorityClass },
      value: 1000,
    } as never,
    'priorityclasses',
    'e2e',
  );
  await apply(cluster, classParameters(shape) as never);
  await gatewayClass(cluster, shape.className, DEFAULT_CONTROLLER_NAME, {
    namespace: sys,
    name: CLASS_PARAMETERS,
  });
  await gatewayParameters(FIRST);
  await applyShapedGateway(shape, GATEWAY_PARAMETERS);
  await route(cluster, ns, 'web', { namespace: ns, name: GATEWAY }, HOST, 'echo');
}

/** The Gateway's own DataPlaneProxy as `p` says, remembered for the next test to change one part of it. */
async function gatewayParameters(p: GatewayParams): Promise<void> {
  current = p;
  await applyGatewayParameters(shape, p);
}

const target = () => ({ address, port: 80, host: HOST });

test('fleet shape: the class’s and the Gateway’s DataPlaneProxy on every generated object, with spec.infrastructure metadata', {
  skip: E2E_SKIP,
}, async () => {
  address = await programmedAddress(cluster, ns, GATEWAY, LOADED_MACHINE_MS);
  await served(address, 80, HOST);
  const deployment = await fleetObject(cluster, fleet, 'Deployment');
  assertPropagated(deployment, 'Deployment');
  assert.deepEqual(deployment?.spec?.strategy, {
    type: 'RollingUpdate',
    rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
  });
  assert.equal(deployment?.spec?.replicas, 3, "the class's replicas");
  assert.ok(appliesSpecField(deployment!, FIELD_MANAGER, 'replicas'), 'Portico applies them');
  assertPodTemplate(shape, deployment?.spec?.template, 'Deployment');
  assert.deepEqual(container(deployment?.spec?.template?.spec, 'proxy').resources, {
    requests: { cpu: '50m', memory: '64Mi' },
    limits: { memory: '512Mi' },
  });
  const service = await fleetObject(cluster, fleet, 'Service');
  assertPropagated(service, 'Service');
  assert.equal(service?.spec?.type, 'LoadBalancer');
  assert.equal(service?.spec?.externalTrafficPolicy, 'Local', "the Gateway's policy");
  assert.deepEqual(service?.spec?.loadBalancerSourceRanges, SOURCE_RANGES, 'served from within them');
  assert.equal(service?.spec?.allocateLoadBalancerNodePorts, false);
  assert.ok(
    asList(service?.spec?.ports).every((p) => p.nodePort === undefined),
    'no node ports allocated',
  );
  assert.equal(service?.metadata?.annotations?.['e2e.portico.io/lb'], 'class', "the class's annotation");
  assert.equal(await fleetObject(cluster, fleet, 'HorizontalPodAutoscaler'), undefined, 'no autoscaler yet');
  const pdb = await fleetObject(cluster, fleet, 'PodDisruptionBudget');
  assertPropagated(pdb, 'PodDisruptionBudget');
  assert.equal(pdb?.spec?.minAvailable, 1, "the Gateway's minAvailable");
  assert.equal(pdb?.spec?.maxUnavailable, undefined, "the class's maxUnavailable is replaced");
  assert.deepEqual(pdb?.spec?.selector, deployment?.spec?.selector);
  assertPropagated(await fleetObject(cluster, fleet, 'ServiceAccount'), 'ServiceAccount');
  if (shape.deployType === 'ControllerNamespace')
    assertPropagated(
      await fleetObject(cluster, fleet, 'Secret', `${fleet.name}-client-cert`),
      'client Secret',
    );
  const pods = await fleetPods(cluster, fleet, true);
  assert.ok(pods.length > 0, 'a ready proxy pod');
  for (const pod of pods) {
    assertPropagated(pod, `pod ${String(pod.metadata?.name)}`);
    // The priority admission resolved the class: the pod runs with its value.
    assert.equal(pod.spec?.priority, 1000);
  }
});

/**
 * The Deployment has `replicas` of its template's latest generation ready; `drained`: and no other pod is left,
 * not even one still stopping.
 */
async function rolledOut(replicas: number, memoryRequest: string, drained = true): Promise<true | undefined> {
  const d = await fleetObject(cluster, fleet, 'Deployment');
  const s = d?.status;
  if (d === undefined || Number(s?.observedGeneration) < Number(d.metadata?.generation)) return undefined;
  if (Number(d.spec?.replicas) !== replicas) return undefined;
  if (![s?.updatedReplicas, s?.readyReplicas, s?.replicas].every((n) => Number(n) === replicas))
    return undefined;
  const pods = (await fleetPods(cluster, fleet)).filter(
    (p) => drained || p.metadata?.deletionTimestamp === undefined,
  );
  const current = pods.filter(
    (p) => container(p.spec, 'proxy').resources?.requests?.memory === memoryRequest,
  );
  return pods.length === replicas && current.length === replicas ? true : undefined;
}

test('an autoscaler added to a running fleet takes its replicas over without a dip, sets them, and Portico leaves them', {
  skip: E2E_SKIP,
}, async (t) => {
  const step = stepTimer(t);
  await eventually(() => rolledOut(3, '64Mi', false), 'the class’s 3 replicas ready', LOADED_MACHINE_MS);
  step('the class’s 3 replicas ready');
  const replicas = await recordReplicas(cluster, fleet);
  let seen: number[];
  try {
    // The Gateway's autoscaler replaces the class's fixed replicas; its maximum of 2 is below the 3 running.
    await gatewayParameters({ ...current, autoscaler: true });
    await eventually(() => rolledOut(2, '64Mi', false), 'the autoscaler’s 2 replicas', LOADED_MACHINE_MS);
    step('the autoscaler’s 2 replicas');
  } finally {
    seen = replicas.stop();
  }
  t.diagnostic(`replicas the Deployment showed: ${seen.join(', ')}`);
  // The handover manager held 3 while Portico dropped the field: never the API server's default of 1.
  assert.ok(seen.length > 0 && seen.every((n) => n === 3 || n === 2), seen.join(', '));
  assert.deepEqual(
    seen,
    [...seen].sort((a, b) => b - a),
    'from 3 down to 2, once',
  );
  const hpa = await fleetObject(cluster, fleet, 'HorizontalPodAutoscaler');
  assertPropagated(hpa, 'HorizontalPodAutoscaler');
  assert.deepEqual(hpa?.spec?.scaleTargetRef, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    name: fleet.name,
  });
  assert.equal(hpa?.spec?.minReplicas, 2);
  assert.equal(hpa?.spec?.maxReplicas, 2);
  assert.equal(hpa?.status?.desiredReplicas, 2);
  const deployment = await fleetObject(cluster, fleet, 'Deployment');
  assert.ok(!appliesSpecField(deployment!, FIELD_MANAGER, 'replicas'), 'Portico no longer applies them');
});

test('a resources change and a strategy change under traffic: the fleet rolls with no failed request, the autoscaler’s replicas stay', {
  skip: E2E_SKIP,
}, async (t) => {
  const replicas = await recordReplicas(cluster, fleet);
  const exits = await recordExits(cluster, fleet);
  const step = stepTimer(t);
  let seen: number[];
  let ended: string[];
  try {
    const result = await duringTraffic([target()], async () => {
      step('traffic flowing');
      // Layered over the class's requests: memory is the Gateway's, cpu stays the class's.
      await gatewayParameters({ ...current, memoryRequest: '80Mi' });
      await eventually(() => rolledOut(2, '80Mi'), 'the fleet rolled to 80Mi', LOADED_MACHINE_MS);
      step('rolled out, the old pods gone');
      // A change to the Deployment alone (no new pods) and a route edit: more passes, more applies.
      await gatewayParameters({ ...current, maxSurge: 2 });
      await eventually(
        async () => {
          const d = await fleetObject(cluster, fleet, 'Deployment');
          return Number(d?.spec?.strategy?.rollingUpdate?.maxSurge) === 2 ? true : undefined;
        },
        'the Gateway’s own strategy applied',
        LOADED_MACHINE_MS,
      );
      step('strategy applied');
      await route(cluster, ns, 'web-2', { namespace: ns, name: GATEWAY }, 'shape-2.example.com', 'echo');
      await served(address, 80, 'shape-2.example.com');
      step('new route served');
    });
    assertNoFailedRequests(t, result);
  } finally {
    seen = replicas.stop();
    ended = exits.stop();
  }
  t.diagnostic(`Deployment events: ${seen.length}, replicas seen: ${[...new Set(seen)].join(', ')}`);
  assertExitedOnTheirOwn(t, ended, 2);
  assert.ok(seen.length > 0, 'the Deployment was watched');
  assert.deepEqual([...new Set(seen)], [2], 'the replicas stayed the autoscaler’s through every apply');
  const deployment = await fleetObject(cluster, fleet, 'Deployment');
  assert.equal(deployment?.spec?.replicas, 2);
  assert.ok(!appliesSpecField(deployment!, FIELD_MANAGER, 'replicas'));
  assert.deepEqual(container(deployment?.spec?.template?.spec, 'proxy').resources?.requests, {
    cpu: '50m',
    memory: '80Mi',
  });
});

test('the PodDisruptionBudget lets one pod be evicted and refuses a second while the first is down', {
  skip: E2E_SKIP,
}, async () => {
  const pods = await eventually(
    async () => {
      const pdb = await fleetObject(cluster, fleet, 'PodDisruptionBudget');
      const s = pdb?.status;
      const settled =
        Number(s?.observedGeneration) === Number(pdb?.metadata?.generation) &&
        Number(s?.currentHealthy) === 2 &&
        Number(s?.disruptionsAllowed) === 1;
      const live = await fleetPods(cluster, fleet, true);
      return settled && live.length === 2 ? live : undefined;
    },
    'two healthy pods and one disruption allowed',
    LOADED_MACHINE_MS,
  );
  const first = await evict(cluster, pods[0]!);
  assert.equal(first.status, 201, `the first eviction is allowed: ${first.message}`);
  const second = await evict(cluster, pods[1]!);
  assert.equal(second.status, 429, `the second eviction is refused: ${second.message}`);
  assert.match(second.message, /disruption budget/);
  // The Deployment replaces the evicted pod; the fleet is whole again for what follows.
  await eventually(
    async () => ((await fleetPods(cluster, fleet, true)).length === 2 ? true : undefined),
    'two ready pods again',
    LOADED_MACHINE_MS,
  );
});

/**
 * The JSON access log lines the fleet's live pods wrote since `since` (`kubectl logs` of each proxy container; a
 * pod whose log cannot be read yet is skipped for this round).
 */
async function accessLogLines(since: string): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  for (const pod of await fleetPods(cluster, fleet, true)) {
    const name = String(pod.metadata?.name);
    try {
      lines.push(
        ...cluster
          .kubectl(['logs', '-n', fleet.namespace, name, '-c', 'proxy', `--since-time=${since}`])
          .split('\n'),
      );
    } catch {
      // Read again next round.
    }
  }
  return lines
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

test('access log: one JSON line per request with the documented fields, read with kubectl logs', {
  skip: E2E_SKIP,
}, async () => {
  const id = `e2e-${randomBytes(6).toString('hex')}`;
  // Only what follows (the traffic of earlier tests fills the logs): one clock, the host's, for node and test.
  const since = new Date(Date.now() - 1000).toISOString();
  const ok = await get(address, 80, HOST, `/access-log/${id}?q=1`);
  assert.equal(ok.status, 200);
  const echoed = JSON.parse(ok.body) as { headers: Record<string, string[]> };
  // The echo backend names headers canonically.
  const requestId = echoed.headers['X-Request-Id']?.[0];
  const missing = await get(address, 80, 'nowhere.example.com', `/access-log/${id}/none`);
  assert.equal(missing.status, 404);
  const [line, miss] = await eventually(
    async () => {
      const lines = await accessLogLines(since);
      const a = lines.find((l) => l.path === `/access-log/${id}?q=1`);
      const b = lines.find((l) => l.path === `/access-log/${id}/none`);
      return a !== undefined && b !== undefined ? [a, b] : undefined;
    },
    'both requests in the access log',
    30_000,
    500,
  );
  assert.equal(line?.method, 'GET');
  assert.equal(line?.authority, HOST);
  assert.equal(line?.protocol, 'HTTP/1.1');
  assert.equal(line?.status, 200);
  assert.equal(line?.request_id, requestId, 'the x-request-id the backend received');
  assert.match(String(line?.start_time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.match(String(line?.upstream_host), /^\d+\.\d+\.\d+\.\d+:3000$/);
  assert.match(String(line?.client_address), /^\d+\.\d+\.\d+\.\d+$/);
  assert.match(String(line?.listener), /^port-/);
  assert.equal(typeof line?.route_name, 'string');
  for (const field of ['bytes_received', 'bytes_sent', 'duration_ms', 'upstream_service_time_ms'])
    assert.equal(typeof line?.[field], 'number', field);
  assert.ok(Number(line?.bytes_sent) > 0);
  assert.equal(line?.response_flags, undefined, 'a plain proxied request has no flag');
  assert.equal(miss?.status, 404);
  assert.equal(miss?.response_flags, 'no_route');
});

test('tracing: a request’s span reaches the OTLP/HTTP receiver in the cluster, parented by the caller’s traceparent', {
  skip: E2E_SKIP,
}, async () => {
  const traceId = randomBytes(16).toString('hex');
  const parent = randomBytes(8).toString('hex');
  const reply = await httpRequestWithTrace(traceId, parent);
  assert.equal(reply.status, 200);
  const sent = (JSON.parse(reply.body) as { headers: Record<string, string[]> }).headers.Traceparent?.[0];
  const match = new RegExp(`^00-${traceId}-([0-9a-f]{16})-01$`).exec(String(sent));
  assert.ok(match !== null, `the backend got the proxy's span as parent: ${sent}`);
  const span = await eventually(
    async () => (await receivedSpans(cluster, ns, 'otlp')).find((s) => s.traceId === traceId),
    'the span at the receiver',
    30_000,
    500,
  );
  assert.equal(span.spanId, match[1]);
  assert.equal(span.parentSpanId, parent);
  assert.equal(span.name, 'GET');
  assert.equal(attributeOf(span, 'url.path'), '/traced');
  assert.equal(attributeOf(span, 'http.response.status_code'), '200');
});

function httpRequestWithTrace(traceId: string, parent: string): Promise<Reply> {
  return httpRequest(80, '/traced', {
    address,
    host: HOST,
    timeoutMs: 5000,
    headers: { traceparent: `00-${traceId}-${parent}-01` },
  });
}

/** Waits for the Gateway's Accepted condition at its generation to be `status` (and returns it). */
async function accepted(status: 'True' | 'False'): Promise<Loose> {
  return eventually(
    async () => {
      const gw = await gatewayStatus(cluster, ns, GATEWAY);
      const c = condition(gw, 'Accepted');
      return c?.status === status && c.observedGeneration === gw.metadata?.generation ? c : undefined;
    },
    `Gateway ${ns}/${GATEWAY} Accepted=${status}`,
    LOADED_MACHINE_MS,
  );
}

/** The workload's generation and the proxies' drain flag, to show a refused change reached nothing. */
async function workloadState(): Promise<string> {
  const d = await fleetObject(cluster, fleet, 'Deployment');
  const args = container(d?.spec?.template?.spec, 'proxy').args;
  return `generation ${String(d?.metadata?.generation)}, --max-drain-seconds ${flagValue(args, '--max-drain-seconds')}`;
}

test('a Gateway parametersRef that cannot be used: Accepted=False/InvalidParameters naming the field, the fleet keeps serving', {
  skip: E2E_SKIP,
}, async () => {
  const before = await workloadState();
  // Fine alone, refused laid over the class's 45 s grace period: a drain of 40 s needs 50.
  await gatewayParameters({ ...current, drainSeconds: 40 });
  const refused = await accepted('False');
  assert.equal(refused.reason, 'InvalidParameters');
  assert.match(String(refused.message), /spec\.infrastructure\.parametersRef/);
  assert.match(
    String(refused.message),
    /spec\.kubernetes\.pod\.terminationGracePeriodSeconds: must be at least 50/,
  );
  assert.equal((await get(address, 80, HOST)).status, 200, 'the fleet serves with its last good parameters');
  assert.equal(await workloadState(), before, 'nothing of the refused parameters reached the fleet');

  // A DataPlaneProxy that does not exist.
  await gatewayParameters({ ...current, drainSeconds: 20 });
  await applyShapedGateway(shape, 'no-such-params');
  const missing = await accepted('False');
  assert.equal(missing.reason, 'InvalidParameters');
  assert.match(String(missing.message), /spec\.infrastructure\.parametersRef: .*no-such-params/);
  assert.equal((await get(address, 80, HOST)).status, 200);
  assert.equal(await workloadState(), before);

  await applyShapedGateway(shape, GATEWAY_PARAMETERS);
  await accepted('True');
  await programmedAddress(cluster, ns, GATEWAY, LOADED_MACHINE_MS);
  assert.equal(await workloadState(), before, 'the same parameters again: no rollout');
});

/**
 * Runs `change` under continuous traffic to `to`: no request may fail, and the proxies it stops (at least
 * `stopped`) must each exit 0 on their own after their drain.
 */
async function switchUnderTraffic(
  t: TestContext,
  to: { address: string; port: number; host: string },
  stopped: number,
  change: (step: (what: string) => void) => Promise<void>,
): Promise<void> {
  const step = stepTimer(t);
  const exits = await recordExits(cluster, fleet);
  let ended: string[];
  try {
    const result = await duringTraffic([to], async () => {
      step('traffic flowing');
      await change(step);
    });
    assertNoFailedRequests(t, result);
  } finally {
    ended = exits.stop();
  }
  assertExitedOnTheirOwn(t, ended, stopped);
}

/** The DaemonSet serves on every node, and nothing of the Deployment is left (its pods gone too). */
async function switchedToDaemonSet(): Promise<true | undefined> {
  const ds = await fleetObject(cluster, fleet, 'DaemonSet');
  const s = ds?.status;
  if (ds === undefined || Number(s?.observedGeneration) < Number(ds.metadata?.generation)) return undefined;
  const desired = Number(s?.desiredNumberScheduled);
  if (!(desired > 0 && Number(s?.numberReady) === desired && Number(s?.updatedNumberScheduled) === desired))
    return undefined;
  if ((await fleetObject(cluster, fleet, 'Deployment')) !== undefined) return undefined;
  if ((await fleetObject(cluster, fleet, 'HorizontalPodAutoscaler')) !== undefined) return undefined;
  const pods = await fleetPods(cluster, fleet);
  return pods.length === desired && pods.every((p) => podOwnerKind(p) === 'DaemonSet') ? true : undefined;
}

test('Deployment → DaemonSet under traffic: no failed request, the autoscaler goes, the DaemonSet fleet serves', {
  skip: E2E_SKIP,
}, async (t) => {
  await switchUnderTraffic(t, target(), 2, async (step) => {
    await gatewayParameters({ ...current, daemonSet: true });
    await eventually(switchedToDaemonSet, 'the DaemonSet alone serving', LOADED_MACHINE_MS, 500);
    step('the DaemonSet alone, the Deployment and its pods gone');
  });
  const ds = await fleetObject(cluster, fleet, 'DaemonSet');
  assertPropagated(ds, 'DaemonSet');
  assertPodTemplate(shape, ds?.spec?.template, 'DaemonSet');
  assert.deepEqual(ds?.spec?.updateStrategy, {
    type: 'RollingUpdate',
    rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
  });
  assert.ok((await fleetObject(cluster, fleet, 'PodDisruptionBudget')) !== undefined, 'the budget stays');
  const [pod] = await fleetPods(cluster, fleet, true);
  const reply = await get(address, 80, HOST, '/daemonset');
  assert.equal(reply.status, 200);
  assert.equal(podOwnerKind(pod!), 'DaemonSet');
});

/** Waits for the fleet's Service to be of `type`: the same object as `before`, patched, not replaced. */
async function serviceTurned(type: string, before: Loose | undefined): Promise<Loose> {
  const service = await eventually(
    async () => {
      const s = await fleetObject(cluster, fleet, 'Service');
      return s?.spec?.type === type ? s : undefined;
    },
    `the Service turned ${type}`,
    LOADED_MACHINE_MS,
  );
  assert.equal(service.metadata?.uid, before?.metadata?.uid, 'patched, not replaced');
  return service;
}

test('LoadBalancer → ClusterIP in place: the Gateway’s address becomes the cluster IP, which serves', {
  skip: E2E_SKIP,
}, async () => {
  const before = await fleetObject(cluster, fleet, 'Service');
  await gatewayParameters({ ...current, service: 'ClusterIP' });
  const service = await serviceTurned('ClusterIP', before);
  assert.equal(service.spec?.externalTrafficPolicy, undefined);
  assert.ok(
    asList(service.spec?.ports).every((p) => p.nodePort === undefined),
    'no node ports left',
  );
  assertPropagated(service, 'Service');
  const clusterIP = String(service.spec?.clusterIP);
  await eventually(
    async () => ((await programmedAddress(cluster, ns, GATEWAY)) === clusterIP ? true : undefined),
    `the Gateway's address ${clusterIP}`,
    LOADED_MACHINE_MS,
  );
  await served(clusterIP, 80, HOST);
});

/** The autoscaler's Deployment serves alone: the DaemonSet and its pods gone, the budget too. */
async function switchedToDeployment(): Promise<true | undefined> {
  if ((await fleetObject(cluster, fleet, 'DaemonSet')) !== undefined) return undefined;
  if ((await fleetObject(cluster, fleet, 'PodDisruptionBudget')) !== undefined) return undefined;
  if ((await rolledOut(2, '80Mi')) === undefined) return undefined;
  const pods = await fleetPods(cluster, fleet);
  return pods.every((p) => podOwnerKind(p) === 'Deployment') ? true : undefined;
}

/** The InternalIP of the node a pod runs on. */
async function nodeAddress(pod: Loose): Promise<string> {
  const node = await call(cluster, 'GET', `/api/v1/nodes/${String(pod.spec?.nodeName)}`);
  const internal = asList(node.body.status?.addresses).find((a) => a.type === 'InternalIP');
  assert.ok(internal !== undefined, `node ${String(pod.spec?.nodeName)} has an InternalIP`);
  return String(internal.address);
}

test('DaemonSet → Deployment, budgets removed and a NodePort Service, under traffic: no failed request, the budget goes, the node port serves', {
  skip: E2E_SKIP,
}, async (t) => {
  const before = await fleetObject(cluster, fleet, 'Service');
  const clusterIP = String(before?.spec?.clusterIP);
  await switchUnderTraffic(t, { address: clusterIP, port: 80, host: HOST }, 1, async (step) => {
    await apply(cluster, classParameters(shape, false) as never);
    await gatewayParameters({ ...current, daemonSet: false, service: 'NodePort', budget: false });
    await eventually(switchedToDeployment, 'the Deployment alone serving', LOADED_MACHINE_MS, 500);
    step('the Deployment alone, the DaemonSet, its pod and the budget gone');
  });
  const deployment = await fleetObject(cluster, fleet, 'Deployment');
  assertPropagated(deployment, 'Deployment');
  assert.ok(
    !appliesSpecField(deployment!, FIELD_MANAGER, 'replicas'),
    'the autoscaler’s replicas, not Portico’s',
  );
  assert.equal((await fleetObject(cluster, fleet, 'HorizontalPodAutoscaler'))?.spec?.maxReplicas, 2);
  const service = await fleetObject(cluster, fleet, 'Service');
  assert.equal(service?.metadata?.uid, before?.metadata?.uid, 'patched, not replaced');
  assert.equal(service?.spec?.type, 'NodePort');
  assert.equal(service?.spec?.clusterIP, clusterIP, 'the Gateway’s address stays');
  const nodePort = Number(asList(service?.spec?.ports).find((p) => Number(p.port) === 80)?.nodePort);
  assert.ok(nodePort >= 30000 && nodePort <= 32767, `a node port in the default range: ${nodePort}`);
  const [pod] = await fleetPods(cluster, fleet, true);
  const node = await nodeAddress(pod!);
  const reply = await served(node, nodePort, HOST);
  t.diagnostic(`served through node port ${node}:${nodePort}`);
  assert.equal(reply.status, 200);
});

/** Waits for the Gateway's Programmed condition at its generation to have `reason` (and returns it). */
async function programmedBecause(reason: string): Promise<Loose> {
  return eventually(
    async () => {
      const gw = await gatewayStatus(cluster, ns, GATEWAY);
      const c = condition(gw, 'Programmed');
      return c?.status === 'False' && c.reason === reason && c.observedGeneration === gw.metadata?.generation
        ? c
        : undefined;
    },
    `Gateway ${ns}/${GATEWAY} Programmed=False/${reason}`,
    LOADED_MACHINE_MS,
  );
}

test('loadBalancerClass: another implementation’s class gets no address here; changing it, which the API server refuses, is reported while the fleet serves', {
  skip: E2E_SKIP,
}, async (t) => {
  const ELSEWHERE = 'e2e.portico.io/elsewhere';
  const before = await fleetObject(cluster, fleet, 'Service');
  const clusterIP = String(before?.spec?.clusterIP);
  // NodePort → LoadBalancer may set a class: the test cluster's load balancer, which has none, leaves it alone.
  await gatewayParameters({ ...current, service: 'LoadBalancer', loadBalancerClass: ELSEWHERE });
  const service = await serviceTurned('LoadBalancer', before);
  assert.equal(service.spec?.loadBalancerClass, ELSEWHERE);
  const unassigned = await programmedBecause('AddressNotAssigned');
  assert.match(String(unassigned.message), /No address assigned/);
  assert.deepEqual(asList((await fleetObject(cluster, fleet, 'Service'))?.status?.loadBalancer?.ingress), []);
  assert.equal((await get(clusterIP, 80, HOST)).status, 200, 'the fleet serves on its cluster IP');

  // A Service's class is immutable once it is a load balancer: the refusal is the Gateway's to show.
  const template = (await fleetObject(cluster, fleet, 'Deployment'))?.metadata?.generation;
  await gatewayParameters({ ...current, loadBalancerClass: 'e2e.portico.io/other', memoryRequest: '96Mi' });
  const refused = await programmedBecause('Invalid');
  t.diagnostic(`Programmed=False/Invalid: ${String(refused.message)}`);
  assert.match(String(refused.message), /spec\.loadBalancerClass/);
  assert.equal((await fleetObject(cluster, fleet, 'Service'))?.spec?.loadBalancerClass, ELSEWHERE);
  assert.equal(
    (await fleetObject(cluster, fleet, 'Deployment'))?.metadata?.generation,
    template,
    'nothing after the refused Service was applied',
  );
  assert.equal((await get(clusterIP, 80, HOST)).status, 200, 'the fleet still serves');

  await gatewayParameters({ ...current, loadBalancerClass: ELSEWHERE, memoryRequest: '80Mi' });
  await programmedBecause('AddressNotAssigned');
});

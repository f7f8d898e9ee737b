// A fleet's shape changes in place: the autoscaler and budget are applied with the fleet and deleted when its
// DataPlaneProxy drops them; a Deployment replaced by a DaemonSet is deleted only once the DaemonSet's pods are
// ready (a DaemonSet that never gets ready leaves the Deployment serving and says why); only objects the
// controller manages for this fleet are ever deleted, also after a restart.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { COMMON_INFRA_LABELS, type FleetInfra } from '../../../src/ir/fleet-infra.js';
import type { FleetShape } from '../../../src/ir/fleet-shape.js';
import { discardingLogger } from '../../../src/platform/log-line.js';
import type { JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { createInfraApplier, type InfraApplier } from '../../../src/provider/kubernetes/infra-applier.js';
import { appliedReplicas } from '../../../src/provider/kubernetes/replicas-handover.js';
import { createFakeKubernetesApi } from '../../support/fake-kubernetes-api.js';
import { manualTimers } from '../../support/manual-timers.js';

const NAME = 'proxy-tenant-a-gw-0000abcd';
const LABELS = {
  ...COMMON_INFRA_LABELS,
  'gateway.portico.io/owning-gateway-namespace': 'tenant-a',
  'gateway.portico.io/owning-gateway-name': 'gw',
};

function fleet(kubernetes?: FleetShape): FleetInfra {
  return {
    fleet: 'tenant-a/gw',
    name: NAME,
    namespace: 'tenant-a',
    labels: LABELS,
    propagated: { labels: {}, annotations: {} },
    gateways: ['tenant-a/gw'],
    ports: [{ name: 'http-80', port: 80, protocol: 'TCP', containerPort: 10080 }],
    ...(kubernetes === undefined ? {} : { kubernetes }),
  };
}

const PATHS = {
  deployment: `/apis/apps/v1/namespaces/tenant-a/deployments/${NAME}`,
  daemonSet: `/apis/apps/v1/namespaces/tenant-a/daemonsets/${NAME}`,
  hpa: `/apis/autoscaling/v2/namespaces/tenant-a/horizontalpodautoscalers/${NAME}`,
  pdb: `/apis/policy/v1/namespaces/tenant-a/poddisruptionbudgets/${NAME}`,
};

/** An API server that holds what is applied (a test adds a workload's status itself). */
function fakeApiServer() {
  const api = createFakeKubernetesApi();
  return {
    objects: api.objects,
    client: api.client,
    /** Every write, as `METHOD path`. */
    get writes(): string[] {
      return api.writes();
    },
    /** Every server-side apply: where, by which field manager, what. */
    get applies(): { path: string; manager: string | null; body: unknown }[] {
      return api.requests
        .filter((r) => r.contentType === 'application/apply-patch+yaml')
        .map((r) => ({ path: r.bare, manager: r.query.get('fieldManager'), body: r.body }));
    },
  };
}

function applierFor(server: ReturnType<typeof fakeApiServer>, timers = manualTimers()): InfraApplier {
  return createInfraApplier({
    client: server.client,
    proxy: { image: 'portico:test' },
    controllerNamespace: 'portico-gateway-system',
    deployType: 'GatewayNamespace',
    caPem: 'ca',
    now: timers.now,
    setTimer: timers.setTimer,
    workloadReady: { pollMs: 1000, waitMs: 5000 },
    log: discardingLogger,
  });
}

async function settled(applier: InfraApplier, fleets: FleetInfra[]) {
  await applier.sync(fleets);
  await applier.idle();
  return applier.sync(fleets);
}

/** Yields until `done()` holds (the applier's work runs on promises the test does not hold). */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !done(); i++) await turn();
  assert.ok(done(), 'the condition never held');
}

const AUTOSCALED: FleetShape = {
  horizontalPodAutoscaler: { minReplicas: 2, maxReplicas: 5 },
  podDisruptionBudget: { minAvailable: 1 },
};

test('an autoscaler and a budget are applied with the fleet; the Deployment has no replicas for the HPA to fight', async () => {
  const server = fakeApiServer();
  const applier = applierFor(server);
  assert.deepEqual([...(await settled(applier, [fleet(AUTOSCALED)]))], []);
  const patches = server.writes.filter((w) => w.startsWith('PATCH')).map((w) => w.split('/').at(-2));
  assert.deepEqual(patches, [
    'configmaps',
    'serviceaccounts',
    'services',
    'deployments',
    'horizontalpodautoscalers',
    'poddisruptionbudgets',
  ]);
  const deployment = server.objects.get(PATHS.deployment)!;
  assert.ok(!('replicas' in (deployment.spec as JsonObject)));
  assert.equal(server.objects.get(PATHS.hpa)?.kind, 'HorizontalPodAutoscaler');
  assert.equal(server.objects.get(PATHS.pdb)?.kind, 'PodDisruptionBudget');
  applier.stop();
});

test('an autoscaler and a budget the DataPlaneProxy no longer has are deleted; the fleet stays', async () => {
  const server = fakeApiServer();
  const applier = applierFor(server);
  await settled(applier, [fleet(AUTOSCALED)]);
  const before = server.writes.length;
  assert.deepEqual([...(await settled(applier, [fleet({ deployment: { replicas: 3 } })]))], []);
  const after = server.writes.slice(before);
  assert.deepEqual(after, [`PATCH ${PATHS.deployment}`, `DELETE ${PATHS.hpa}`, `DELETE ${PATHS.pdb}`]);
  assert.equal((server.objects.get(PATHS.deployment)!.spec as JsonObject).replicas, 3);
  // Nothing more to delete on the next change: no request for kinds known to be gone.
  await settled(applier, [fleet({ deployment: { replicas: 4 } })]);
  assert.deepEqual(server.writes.slice(before + after.length), [`PATCH ${PATHS.deployment}`]);
  applier.stop();
});

test('Deployment → DaemonSet: the DaemonSet is applied first, the Deployment deleted only once its pods are ready', async () => {
  const server = fakeApiServer();
  const timers = manualTimers();
  const applier = applierFor(server, timers);
  await settled(applier, [fleet()]);
  await applier.sync([fleet({ daemonSet: {} })]);
  await until(() => timers.waits().includes(1000));
  assert.ok(server.objects.has(PATHS.daemonSet));
  assert.ok(server.objects.has(PATHS.deployment), 'the Deployment serves while the DaemonSet is not ready');
  // The DaemonSet controller reports every scheduled pod ready, at the current generation.
  Object.assign(server.objects.get(PATHS.daemonSet)!, {
    metadata: { ...(server.objects.get(PATHS.daemonSet)!.metadata as JsonObject), generation: 1 },
    status: { observedGeneration: 1, desiredNumberScheduled: 2, numberReady: 2, updatedNumberScheduled: 2 },
  });
  timers.next();
  await applier.idle();
  assert.ok(!server.objects.has(PATHS.deployment));
  const order = server.writes.filter((w) => w.includes('daemonsets') || w.includes('deployments'));
  assert.deepEqual(order.slice(-2), [`PATCH ${PATHS.daemonSet}`, `DELETE ${PATHS.deployment}`]);
  assert.deepEqual([...(await applier.sync([fleet({ daemonSet: {} })]))], []);
  applier.stop();
});

test('a DaemonSet that never gets ready leaves the Deployment serving, and the fleet says why', async () => {
  const server = fakeApiServer();
  const timers = manualTimers();
  const applier = applierFor(server, timers);
  await settled(applier, [fleet()]);
  await applier.sync([fleet({ daemonSet: {} })]);
  for (let i = 0; i < 5; i++) {
    await until(() => timers.waits().includes(1000));
    timers.next();
  }
  await applier.idle();
  const problems = await applier.sync([fleet({ daemonSet: {} })]);
  assert.equal(problems.get('tenant-a/gw')?.reason, 'Pending');
  assert.match(
    problems.get('tenant-a/gw')?.message ?? '',
    /^DaemonSet tenant-a\/proxy-tenant-a-gw-0000abcd: not all its pods ready after 5 s; the Deployment it replaces keeps serving/,
  );
  assert.ok(server.objects.has(PATHS.deployment));
  applier.stop();
});

test('after a restart, a budget of this fleet left behind is found and deleted; one Portico does not manage is not', async () => {
  const server = fakeApiServer();
  server.objects.set(PATHS.pdb, { kind: 'PodDisruptionBudget', metadata: { name: NAME, labels: LABELS } });
  server.objects.set(PATHS.hpa, {
    kind: 'HorizontalPodAutoscaler',
    metadata: { name: NAME, labels: { team: 'tenant-a' } },
  });
  const applier = applierFor(server);
  assert.deepEqual([...(await settled(applier, [fleet()]))], []);
  assert.ok(!server.objects.has(PATHS.pdb));
  assert.ok(server.objects.has(PATHS.hpa), 'a foreign autoscaler of the same name is left alone');
  assert.ok(!server.writes.includes(`DELETE ${PATHS.hpa}`));
  applier.stop();
});

test('another fleet’s autoscaler of the same name is never deleted', async () => {
  const server = fakeApiServer();
  const other = { ...LABELS, 'gateway.portico.io/owning-gateway-name': 'older' };
  server.objects.set(PATHS.hpa, { kind: 'HorizontalPodAutoscaler', metadata: { name: NAME, labels: other } });
  const applier = applierFor(server);
  await settled(applier, [fleet()]);
  assert.ok(server.objects.has(PATHS.hpa));
  applier.stop();
});

test('replicas are handed to the autoscaler without a dip: another manager holds them before Portico drops them', async () => {
  const server = fakeApiServer();
  const applier = applierFor(server);
  await settled(applier, [fleet({ deployment: { replicas: 3 } })]);
  // As the API server serves it: Portico's apply owns spec.replicas.
  const served = server.objects.get(PATHS.deployment)!;
  (served.metadata as JsonObject).managedFields = [
    { manager: 'portico-gateway', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
  ];
  const before = server.applies.length;
  await settled(applier, [fleet(AUTOSCALED)]);
  const deploymentApplies = server.applies.slice(before).filter((a) => a.path === PATHS.deployment);
  assert.deepEqual(
    deploymentApplies.map((a) => a.manager),
    ['portico-gateway-replicas-handover', 'portico-gateway'],
  );
  assert.deepEqual((deploymentApplies[0]!.body as JsonObject).spec, { replicas: 3 });
  assert.ok(!('replicas' in ((deploymentApplies[1]!.body as JsonObject).spec as JsonObject)));
  applier.stop();
});

test('appliedReplicas: only while Portico’s own apply owns the field', () => {
  const deployment = (manager: string, operation: string): JsonObject => ({
    spec: { replicas: 4 },
    metadata: { managedFields: [{ manager, operation, fieldsV1: { 'f:spec': { 'f:replicas': {} } } }] },
  });
  assert.equal(appliedReplicas(deployment('portico-gateway', 'Apply')), 4);
  assert.equal(appliedReplicas(deployment('kube-controller-manager', 'Update')), undefined);
  assert.equal(appliedReplicas(deployment('portico-gateway-replicas-handover', 'Apply')), undefined);
});

// The gateway-helm chart's life cycle with real helm on the real cluster: Gateway Namespace Mode restricted to a
// namespace list, an upgrade that changes values under traffic (among them a status write rate so low that
// statuses queue while an edit is served), a rollback, and an uninstall that leaves nothing of the release behind.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../src/api/controller-config.js';
import type { Cluster } from '../../cluster/harness.js';
import { helm } from '../../cluster/helm.js';
import { asList, call, eventually } from '../../cluster/kube-api.js';
import { sampleValue } from '../../support/prometheus.js';
import { assertNoFailedRequests, duringTraffic, flowing } from './handover.js';
import { CHART, E2E_SKIP, install, type Release } from './install.js';
import { kubernetesE2e } from './preamble.js';
import {
  controllerMetrics,
  echoNamespace,
  gateway,
  gatewayClass,
  programmedAddress,
  route,
  routeAccepted,
  served,
} from './traffic.js';

const RELEASE_NS = 'portico-helm';
const PREFIX = `gateway-helm-${RELEASE_NS}`;
let cluster: Cluster;
let release: Release;
let address: string;
/** Traffic through team-x's Gateway, served before, during and after each change to the release. */
const teamX = () => ({ address, port: 80, host: 'team-x.example.com' });

kubernetesE2e(async (leased) => {
  cluster = leased;
  for (const ns of ['team-x', 'team-y', 'team-z']) {
    await echoNamespace(cluster, ns);
  }
  release = await install(cluster, {
    release: 'edge',
    namespace: RELEASE_NS,
    set: [
      'config.deployType=GatewayNamespace',
      'config.watch.type=Namespaces',
      'config.watch.namespaces={team-x}',
    ],
  });
  await gatewayClass(cluster, 'portico', DEFAULT_CONTROLLER_NAME);
});

async function roles(ns: string): Promise<string[]> {
  const r = await call(cluster, 'GET', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`);
  return asList(r.body.items).map((i) => String(i.metadata?.name));
}

function controllerArgs(): string[] {
  const out = cluster.kubectl([
    '-n',
    RELEASE_NS,
    'get',
    'deployment',
    'portico-gateway',
    '-o',
    'jsonpath={.spec.template.spec.containers[0].args}',
  ]);
  return JSON.parse(out) as string[];
}

function caCertificate(): string {
  return cluster.kubectl([
    '-n',
    RELEASE_NS,
    'get',
    'secret',
    'portico-gateway-ca',
    '-o',
    'jsonpath={.data.ca\\.crt}',
  ]);
}

/** `helm upgrade --reuse-values` of the release with more `--set` assignments, waiting for the rollout. */
async function upgrade(sets: string[]): Promise<void> {
  const args = ['upgrade', 'edge', CHART, '-n', RELEASE_NS, '--reuse-values', '--wait', '--timeout', '180s'];
  await helm(cluster, [...args, ...sets.flatMap((set) => ['--set', set])]);
}

function watchedConfig(): string {
  return cluster.kubectl([
    '-n',
    RELEASE_NS,
    'get',
    'configmap',
    'portico-gateway-config',
    '-o',
    'jsonpath={.data.portico\\.yaml}',
  ]);
}

async function gatewayIn(ns: string): Promise<string> {
  await gateway(cluster, ns, 'gw', 'portico', [{ name: 'http', port: 80 }]);
  await route(cluster, ns, 'web', { namespace: ns, name: 'gw' }, `${ns}.example.com`, 'echo');
  const a = await programmedAddress(cluster, ns, 'gw');
  await served(a, 80, `${ns}.example.com`);
  return a;
}

test('Gateway Namespace Mode with a namespace list: infrastructure RBAC only there, traffic through its Gateway', {
  skip: E2E_SKIP,
}, async () => {
  assert.ok((await roles('team-x')).includes(`${PREFIX}-infra-manager`));
  assert.ok(!(await roles('team-z')).includes(`${PREFIX}-infra-manager`), 'no Role outside the watch list');
  const cr = await call(
    cluster,
    'GET',
    `/apis/rbac.authorization.k8s.io/v1/clusterroles/${PREFIX}-cluster-infra-manager`,
  );
  assert.equal(cr.status, 200);
  // With a watch list the cluster-wide role holds only TokenReview.
  assert.deepEqual(
    asList(cr.body.rules).map((r) => asList(r.resources).map(String)),
    [['tokenreviews']],
  );
  address = await gatewayIn('team-x');
  const proxies = await call(cluster, 'GET', '/apis/apps/v1/namespaces/team-x/deployments');
  assert.ok(asList(proxies.body.items).some((d) => String(d.metadata?.name).startsWith('proxy-team-x-gw-')));
  // An unwatched namespace's Gateway is not this controller's business.
  await gateway(cluster, 'team-z', 'gw', 'portico', [{ name: 'http', port: 80 }]);
});

const SLOW_ROUTES = 20;

/**
 * Under a status write rate of 1 a second (one at once), 20 new routes and an edit of the last queue their
 * statuses for about 20 s: the edit is served meanwhile, with writes waiting for their turn and the edited route's
 * status not yet written. Resolves with the routes, whose statuses a faster controller then catches up with.
 */
async function editServedUnderSlowStatuses(): Promise<string[]> {
  const names = Array.from({ length: SLOW_ROUTES }, (_, i) => `slow-${i}`);
  // The last made is edited: both its statuses queue behind all the others'.
  const last = names.at(-1)!;
  for (const name of names) {
    await route(cluster, 'team-x', name, { namespace: 'team-x', name: 'gw' }, `${name}.example.com`, 'echo');
  }
  const edited = await call(
    cluster,
    'PATCH',
    `/apis/gateway.networking.k8s.io/v1/namespaces/team-x/httproutes/${last}`,
    { spec: { hostnames: [`${last}-edited.example.com`] } },
    { contentType: 'application/merge-patch+json' },
  );
  assert.equal(edited.status, 200);
  await served(address, 80, `${last}-edited.example.com`);
  const metrics = await controllerMetrics(cluster, RELEASE_NS);
  assert.equal(sampleValue(metrics, 'portico_status_write_limit', { limit: 'qps' }), 1);
  assert.equal(sampleValue(metrics, 'portico_status_write_limit', { limit: 'burst' }), 1);
  // Statuses lag: writes wait their turn, the edit's is behind the new routes', and yet the edit is served.
  assert.ok((sampleValue(metrics, 'portico_status_write_requests_waiting') ?? 0) >= 1, 'writes waiting');
  assert.equal(
    await routeAccepted(cluster, 'team-x', last),
    false,
    "the edited route's status is not written yet",
  );
  return names;
}

test('helm upgrade of the watch list, log level and status write rate rolls the controller with no failed request; an edit is served while statuses queue; rollback restores and they catch up', {
  skip: E2E_SKIP,
}, async (t) => {
  let slow: string[] = [];
  const result = await duringTraffic([teamX()], async (traffic) => {
    await upgrade([
      'config.watch.namespaces={team-x,team-y}',
      'logLevel=debug',
      'controller.statusWrites.qps=1',
      'controller.statusWrites.burst=1',
    ]);
    assert.ok(controllerArgs().includes('--log-level=debug'));
    assert.ok(controllerArgs().includes('--status-write-qps=1'));
    assert.match(watchedConfig(), /team-y/);
    assert.ok((await roles('team-y')).includes(`${PREFIX}-infra-manager`));
    // The rolled controller serves the newly watched namespace.
    await gatewayIn('team-y');
    await flowing(traffic);
    slow = await editServedUnderSlowStatuses();
    await helm(cluster, ['rollback', 'edge', '1', '-n', RELEASE_NS, '--wait', '--timeout', '180s']);
    assert.ok(controllerArgs().includes('--log-level=info'));
    assert.doesNotMatch(watchedConfig(), /team-y/);
    assert.ok(
      !(await roles('team-y')).includes(`${PREFIX}-infra-manager`),
      'the Role in team-y went with the rollback',
    );
    await eventually(
      async () => {
        const pods = await call(
          cluster,
          'GET',
          `/api/v1/namespaces/${RELEASE_NS}/pods?labelSelector=app.kubernetes.io%2Fcomponent%3Dcontroller`,
        );
        const live = asList(pods.body.items).filter((p) => p.metadata?.deletionTimestamp === undefined);
        return live.length === 1 ? true : undefined;
      },
      'one controller after the rollback',
      60_000,
    );
  });
  assertNoFailedRequests(t, result);
  assert.match(await helm(cluster, ['history', 'edge', '-n', RELEASE_NS]), /rollback to 1/i);
  // Back at the default rate, the controller writes every status the slow one had queued.
  await eventually(
    async () => {
      for (const name of slow) if (!(await routeAccepted(cluster, 'team-x', name))) return undefined;
      return true;
    },
    'the queued statuses written',
    90_000,
    500,
  );
});

test('helm upgrade with certgen.rotate: new CA, the controller restarts, proxies reconnect with new certificates, no failed request', {
  skip: E2E_SKIP,
}, async (t) => {
  const caBefore = caCertificate();
  const result = await duringTraffic([teamX()], async () => {
    await upgrade(['certgen.rotate=true']);
    const caAfter = caCertificate();
    assert.notEqual(caAfter, caBefore, 'a new CA');
    // The Gateway Namespace Mode proxies trust the CA ConfigMap the new controller writes: a change programmed
    // after the rotation proves they reconnected with it.
    await route(
      cluster,
      'team-x',
      'after-rotation',
      { namespace: 'team-x', name: 'gw' },
      'rotated.example.com',
      'echo',
    );
    await served(address, 80, 'rotated.example.com');
  });
  assertNoFailedRequests(t, result);
});

test('helm uninstall removes every object of the release, and the fleets, certificates and Lease its controller made', {
  skip: E2E_SKIP,
}, async () => {
  const selector = 'app.kubernetes.io/instance=edge';
  const kinds = 'deployments,services,configmaps,serviceaccounts,roles,rolebindings,jobs,pods';
  const before = cluster.kubectl(['get', kinds, '-A', '-l', selector, '-o', 'name']);
  assert.match(before, /deployment.apps\/portico-gateway/);
  const made = `gateway.portico.io/controller-namespace=${RELEASE_NS}`;
  const fleets = () =>
    cluster.kubectl([
      'get',
      'deployments,services,serviceaccounts,configmaps',
      '-A',
      '-l',
      made,
      '-o',
      'name',
    ]);
  assert.match(fleets(), /deployment.apps\/proxy-team-x-gw-/);
  assert.match(fleets(), /configmap\/portico-ca/);
  const secrets = () =>
    cluster.kubectl([
      '-n',
      RELEASE_NS,
      'get',
      'secrets',
      '-l',
      'app.kubernetes.io/managed-by=portico-gateway',
      '-o',
      'name',
    ]);
  assert.match(secrets(), /portico-gateway-ca/);
  const lease = () => cluster.kubectl(['-n', RELEASE_NS, 'get', 'leases', '-o', 'name']);
  assert.notEqual(lease().trim(), '');
  await helm(cluster, ['uninstall', 'edge', '-n', RELEASE_NS, '--wait', '--timeout', '180s']);
  assert.equal(fleets().trim(), '', 'the fleets the controller made are gone');
  assert.equal(secrets().trim(), '', 'the certificate Secrets are gone');
  assert.equal(lease().trim(), '', 'the leader Lease is gone');
  await release.uninstall();
  await eventually(
    async () =>
      cluster.kubectl(['get', kinds, '-A', '-l', selector, '-o', 'name']).trim() === '' ? true : undefined,
    'no namespaced object of the release left',
    60_000,
  );
  const clusterScoped = cluster.kubectl([
    'get',
    'clusterroles,clusterrolebindings',
    '-l',
    selector,
    '-o',
    'name',
  ]);
  assert.equal(clusterScoped.trim(), '');
});

// Availability end to end (Gateway Namespace Mode, two controller replicas): a token of one fleet is refused for
// another; leader handover and a controller restart under continuous traffic fail no request, Programmed never
// flaps to False, and the next edit is programmed by whoever leads afterwards.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { startDiscoveryClient } from '../../../../src/discovery/client.js';
import type { FleetConfig } from '../../../../src/ir/fleet-config.js';
import { discoveryAudience } from '../../../../src/provider/kubernetes/token-auth.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually, type Loose } from '../../../cluster/kube-api.js';
import {
  assertNoFailedRequests,
  CONTROLLER,
  controllerPods,
  duringTraffic,
  flowing,
  lease,
  type ProgrammedRecord,
  podToken,
  proxiesConnected,
  proxyPod,
  recordProgrammed,
  replicaReports,
  settledLeader,
  type Traffic,
  type TrafficResult,
} from '../handover.js';
import { E2E_SKIP } from '../install.js';
import {
  apply,
  condition,
  echoNamespace,
  gateway,
  gatewayClass,
  gatewayStatus,
  programmedAddress,
  route,
  served,
} from '../traffic.js';

let cluster: Cluster;
let system: string;
const address: Record<string, string> = {};
const TEAMS = ['team-a', 'team-b'] as const;
// Bound for status to follow an edit: generous, the serial phase shares 2 cores with other work.
const LOADED_MACHINE_MS = 30_000;

/** Runs in the file's before(), once Portico is installed in `sys`. */
export async function setup(c: Cluster, sys: string): Promise<void> {
  cluster = c;
  system = sys;
  await gatewayClass(cluster, 'portico', CONTROLLER);
  for (const ns of TEAMS) {
    await echoNamespace(cluster, ns);
    await gateway(cluster, ns, 'gw', 'portico', [{ name: 'http', port: 80 }]);
    await route(cluster, ns, 'web', { namespace: ns, name: 'gw' }, `${ns}.example.com`, 'echo');
  }
  for (const ns of TEAMS) {
    address[ns] = await programmedAddress(cluster, ns, 'gw');
    await served(address[ns]!, 80, `${ns}.example.com`);
  }
}

function everyTeam() {
  return TEAMS.map((ns) => ({ address: address[ns]!, port: 80, host: `${ns}.example.com` }));
}

/**
 * Programmed stayed True through the disruption at the generations the Gateways had before it (an edit made on
 * purpose may be Pending at its new generation until a proxy applied it).
 */
function assertNoFlap(records: ProgrammedRecord[], generations: Map<string, number>): void {
  const flaps = records.filter(
    (r) => r.status !== 'True' && r.observedGeneration === generations.get(r.gateway),
  );
  assert.deepEqual(flaps, [], 'Programmed flapped during the disruption');
}

/**
 * `disrupt` happens while traffic flows to every team's Gateway and every Programmed condition is recorded: no
 * request fails, and Programmed holds at the generations from before (disrupt gets the traffic to check on it).
 */
async function withoutFailuresOrFlaps(t: TestContext, disrupt: (traffic: Traffic) => Promise<void>) {
  const generations = await gatewayGenerations();
  const recorder = await recordProgrammed(cluster);
  let result: TrafficResult;
  let records: ProgrammedRecord[];
  try {
    result = await duringTraffic(everyTeam(), disrupt);
  } finally {
    records = recorder.stop();
  }
  assertNoFailedRequests(t, result);
  assertNoFlap(records, generations);
}

async function gatewayGenerations(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const ns of TEAMS)
    out.set(`${ns}/gw`, Number((await gatewayStatus(cluster, ns, 'gw')).metadata?.generation));
  return out;
}

/** A Gateway edit (its listener admits only routes of its own namespace) Programmed at its new generation. */
async function gatewayEditProgrammed(ns: string): Promise<void> {
  const previous = Number((await gatewayStatus(cluster, ns, 'gw')).metadata?.generation);
  await apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'gw', namespace: ns },
    spec: {
      gatewayClassName: 'portico',
      listeners: [
        { name: 'http', port: 80, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'Same' } } },
      ],
    },
  });
  await eventually(
    async () => {
      const gw = await gatewayStatus(cluster, ns, 'gw');
      const generation = Number(gw.metadata?.generation);
      const programmed = condition(gw, 'Programmed');
      return generation > previous &&
        programmed?.status === 'True' &&
        Number(programmed.observedGeneration) === generation
        ? true
        : undefined;
    },
    `${ns}/gw Programmed at its new generation`,
    LOADED_MACHINE_MS,
  );
}

async function routeStatus(ns: string, name: string): Promise<Loose | undefined> {
  const r = await call(
    cluster,
    'GET',
    `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/httproutes/${name}`,
  );
  return r.body.status;
}

async function deletePod(name: string): Promise<void> {
  const r = await call(cluster, 'DELETE', `/api/v1/namespaces/${system}/pods/${name}`);
  assert.equal(r.status, 200, `delete pod ${name}: ${JSON.stringify(r.body)}`);
}

/** A new route on team-a's Gateway answers 200 and its parent status is Accepted at its generation. */
async function newRouteProgrammed(name: string): Promise<void> {
  const host = `${name}.example.com`;
  const attachedBefore = Number(
    asList((await gatewayStatus(cluster, 'team-a', 'gw')).status?.listeners)[0]?.attachedRoutes,
  );
  await route(cluster, 'team-a', name, { namespace: 'team-a', name: 'gw' }, host, 'echo');
  await served(address['team-a']!, 80, host);
  await eventually(
    async () => {
      const r = await call(
        cluster,
        'GET',
        `/apis/gateway.networking.k8s.io/v1/namespaces/team-a/httproutes/${name}`,
      );
      const parent = asList(r.body.status?.parents)[0];
      const accepted = asList(parent?.conditions).find((c) => c.type === 'Accepted');
      return accepted?.status === 'True' && accepted.observedGeneration === r.body.metadata?.generation
        ? true
        : undefined;
    },
    `route ${name} Accepted`,
    LOADED_MACHINE_MS,
  );
  await eventually(
    async () => {
      const gw = await gatewayStatus(cluster, 'team-a', 'gw');
      const listener = asList(gw.status?.listeners)[0];
      return Number(listener?.attachedRoutes) === attachedBefore + 1 ? true : undefined;
    },
    'team-a/gw counts the new route',
    LOADED_MACHINE_MS,
  );
}

test('a fleet token opens only its own fleet; other fleets, wrong audiences and invalid tokens are refused', {
  skip: E2E_SKIP,
}, async () => {
  const podA = await proxyPod(cluster, 'team-a', 'gw');
  const podB = await proxyPod(cluster, 'team-b', 'gw');
  const nodeA = String(podA.metadata?.name);
  const audience = discoveryAudience(system);
  const tokenA = await podToken(cluster, podA, audience);
  const wrongAudience = await podToken(cluster, podA, 'somewhere-else.example.com');
  const ca = await call(cluster, 'GET', '/api/v1/namespaces/team-a/configmaps/portico-ca');
  const service = await call(cluster, 'GET', `/api/v1/namespaces/${system}/services/portico-gateway`);
  const discovery = `${String(service.body.spec?.clusterIP)}:18000`;

  /** Opens one discovery stream; resolves with the configs received and the error that closed it. */
  async function open(fleet: string, node: string, token: string, address = discovery) {
    const received: FleetConfig[] = [];
    const client = startDiscoveryClient({
      address,
      fleet,
      node,
      tls: { caPem: String(ca.body.data?.['ca.crt']), serverName: `portico-gateway.${system}.svc` },
      token: async () => token,
      // One attempt is enough: a refused stream must not be retried during the test.
      backoff: { initialMs: 60_000, maxMs: 60_000 },
      apply: async (config) => {
        received.push(config);
        return { ok: true, listenerErrors: [] };
      },
    });
    try {
      return await eventually(
        async () => {
          const s = client.status();
          if (s.lastError !== undefined) return { received, error: s.lastError };
          return received.length > 0 ? { received, error: undefined } : undefined;
        },
        `discovery for ${fleet} as ${node}`,
        20_000,
      );
    } finally {
      await client.stop();
    }
  }

  // Pod A's proxy holds the stream of its node on one replica: there a second stream as that node, even with
  // its token, is refused; another replica, where it holds none, serves that token its own fleet's config.
  const replicas = await controllerPods(cluster, system);
  const reports = await replicaReports(cluster, system);
  const holder = replicas.find((r) => reports.get(r.name)?.some((n) => n.node === nodeA));
  const other = replicas.find((r) => r !== holder);
  assert.ok(holder !== undefined && other !== undefined, 'two replicas, one holding pod A’s stream');
  const duplicate = await open('team-a/gw', nodeA, tokenA, `${holder.ip}:18000`);
  assert.match(
    String(duplicate.error),
    /ALREADY_EXISTS: node '.*' of fleet 'team-a\/gw' is already connected/,
  );
  assert.deepEqual(duplicate.received, [], 'a duplicate node gets nothing');
  const own = await open('team-a/gw', nodeA, tokenA, `${other.ip}:18000`);
  assert.equal(own.error, undefined);
  assert.deepEqual(
    own.received[0]?.gateways.map((g) => g.name),
    ['team-a/gw'],
    'its own fleet’s config arrives',
  );

  for (const node of [nodeA, String(podB.metadata?.name)]) {
    const other = await open('team-b/gw', node, tokenA);
    assert.match(String(other.error), /PERMISSION_DENIED/, `fleet B as ${node}`);
    assert.deepEqual(other.received, [], 'no configuration of another fleet');
  }
  const audienceRefused = await open('team-a/gw', nodeA, wrongAudience);
  assert.match(String(audienceRefused.error), /UNAUTHENTICATED/);
  assert.deepEqual(audienceRefused.received, []);
  const [header, payload] = tokenA.split('.');
  const forged = `${header}.${payload}.${Buffer.from('not the signature').toString('base64url')}`;
  for (const invalid of [forged, 'not-a-token']) {
    const refused = await open('team-a/gw', nodeA, invalid);
    assert.match(String(refused.error), /UNAUTHENTICATED/);
    assert.deepEqual(refused.received, []);
  }
});

test('leader handover under traffic: the other replica takes the Lease and programs the next change, no request fails', {
  skip: E2E_SKIP,
}, async (t) => {
  const leader = await settledLeader(cluster, system, 2);
  const before = await lease(cluster, system);
  const proxies = await Promise.all(
    TEAMS.map(async (ns) => String((await proxyPod(cluster, ns, 'gw')).metadata?.name)),
  );
  const onLeader = (await replicaReports(cluster, system)).get(leader)?.map((n) => n.node) ?? [];
  t.diagnostic(
    `proxies connected to the leader before its deletion: ${onLeader.length} of ${proxies.length}`,
  );
  await withoutFailuresOrFlaps(t, async () => {
    const deleted = Date.now();
    await deletePod(leader);
    const duration = (before?.leaseDurationSeconds ?? 15) * 1000;
    const next = await eventually(
      async () => {
        const holder = (await lease(cluster, system))?.holderIdentity;
        return holder !== undefined && holder !== '' && holder !== leader ? holder : undefined;
      },
      'another replica holding the Lease',
      duration,
    );
    t.diagnostic(`${next} took the Lease ${Date.now() - deleted} ms after ${leader} was deleted`);
    assert.ok((await controllerPods(cluster, system)).some((p) => p.name === next));
    // The old leader is gone (or going): what follows is the new leader's work.
    await eventually(
      async () => ((await controllerPods(cluster, system)).some((p) => p.name === leader) ? undefined : true),
      `pod ${leader} gone`,
    );
    await proxiesConnected(cluster, system, proxies);
    await newRouteProgrammed('after-handover');
    // A Gateway edit needs a proxy's Ack, which may reach the replacement replica: the leader counts its peers'.
    await gatewayEditProgrammed('team-b');
    const after = await lease(cluster, system);
    assert.equal(after?.holderIdentity, next);
    assert.ok((after?.leaseTransitions ?? 0) > (before?.leaseTransitions ?? 0), 'a transition was recorded');
    // The Deployment replaced the deleted replica; the new leader keeps the Lease.
    assert.equal(await settledLeader(cluster, system, 2), next);
  });
});

test('controller restart under traffic (one replica): proxies keep serving, status stays, the next edit applies', {
  skip: E2E_SKIP,
}, async (t) => {
  await call(
    cluster,
    'PATCH',
    `/apis/apps/v1/namespaces/${system}/deployments/portico-gateway`,
    { spec: { replicas: 1 } },
    { contentType: 'application/merge-patch+json' },
  );
  const scaled = Date.now();
  const only = await settledLeader(cluster, system, 1);
  t.diagnostic(`scaled to one replica in ${Date.now() - scaled} ms; ${only} leads`);
  const gatewaysBefore: Loose[] = [];
  for (const ns of TEAMS) gatewaysBefore.push(await gatewayStatus(cluster, ns, 'gw'));
  const routesBefore = await Promise.all(TEAMS.map((ns) => routeStatus(ns, 'web')));
  const proxies = await Promise.all(
    TEAMS.map(async (ns) => String((await proxyPod(cluster, ns, 'gw')).metadata?.name)),
  );
  await withoutFailuresOrFlaps(t, async (traffic) => {
    const deleted = Date.now();
    await deletePod(only);
    const successor = await settledLeader(cluster, system, 1);
    t.diagnostic(`${successor} ready and leading ${Date.now() - deleted} ms after ${only} was deleted`);
    assert.notEqual(successor, only);
    await proxiesConnected(cluster, system, proxies);
    await flowing(traffic);
    await newRouteProgrammed('after-restart');
  });
  for (const [i, ns] of TEAMS.entries()) {
    const gw = await gatewayStatus(cluster, ns, 'gw');
    const programmed = condition(gw, 'Programmed');
    assert.equal(programmed?.status, 'True', `${ns}/gw Programmed`);
    for (const c of asList(gw.status?.conditions)) {
      assert.equal(c.observedGeneration, gw.metadata?.generation, `${ns}/gw ${String(c.type)} generation`);
    }
    // The condition held throughout: its transition time is the one from before the restart.
    const earlier = condition(gatewaysBefore[i]!, 'Programmed');
    assert.equal(
      programmed?.lastTransitionTime,
      earlier?.lastTransitionTime,
      `${ns}/gw never re-transitioned`,
    );
  }
  // Route status, which does not depend on the proxies, is not rewritten either.
  for (const [i, ns] of TEAMS.entries()) {
    assert.deepEqual(await routeStatus(ns, 'web'), routesBefore[i], `${ns}/web status unchanged`);
  }
});

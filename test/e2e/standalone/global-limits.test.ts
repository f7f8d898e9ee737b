// Global rate limits end to end, standalone: RateLimitPolicies from YAML (Redis named by a selector-less Service
// and its EndpointSlice, the password from a Secret) through the real controller to two replicas of one fleet —
// the proxy `portico standalone` runs, and a second `portico proxy` on another address with the fleet's own
// certificate from the state directory — sharing one real redis-server. The replicas together allow exactly the
// limit; Redis stopped under traffic: the Open rule lets requests through, the Closed one answers 429, each
// counted and logged once per replica; Redis started again: limits hold again. Skips without redis-server.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fleetInfraName } from '../../../src/ir/fleet-infra.js';
import { startPortico } from '../../support/child.js';
import { freePort, httpRequest } from '../../support/http.js';
import { parsePrometheus, sampleValue } from '../../support/prometheus.js';
import { redisMissing, redisServer } from '../../support/redis.js';
import {
  adminResources,
  defer,
  echo,
  eventually,
  localServiceYaml,
  PORTICO_CLASS_YAML,
  programmedAddress,
  startStandalone,
  tempDir,
  untilStatus,
} from './harness.js';

const PASSWORD = 'e2e-redis-password';
/** The shared rule's limit: leases of max(1, min(100, floor(100 / 20))) = 5 tokens (src/proxy/rate-limits.ts). */
const SHARED_LIMIT = 100;
/** The second replica's listener address: outside the controller's pool. */
const REPLICA_ADDRESS = '127.0.58.1';

function resources(backendPort: number, redisPort: number): string {
  const policy = (name: string, section: string, requests: number, failureMode = '') => `---
apiVersion: gateway.portico.io/v1alpha1
kind: RateLimitPolicy
metadata: {name: ${name}, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: www, sectionName: ${section}}]
  redis:
    serviceRef: {name: redis, port: 6379}
    passwordSecretRef: {name: redis-auth}
    timeout: 250ms${failureMode === '' ? '' : `\n    failureMode: ${failureMode}`}
  rules:
    - {name: per-client, keys: [{type: Header, name: x-client}], requests: ${requests}, period: 1h, scope: Global}
`;
  const match = (name: string) =>
    `    - {name: ${name}, matches: [{path: {type: PathPrefix, value: /${name}}}], backendRefs: [{name: backend, port: 3000}]}`;
  return `${PORTICO_CLASS_YAML}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: eg, namespace: default}
spec:
  gatewayClassName: portico
  listeners: [{name: http, protocol: HTTP, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: www, namespace: default}
spec:
  parentRefs: [{name: eg}]
  rules:
${match('shared')}
${match('open')}
${match('closed')}
    - backendRefs: [{name: backend, port: 3000}]
---
${localServiceYaml('backend', 3000, backendPort, 'http')}---
${localServiceYaml('redis', 6379, redisPort, 'redis')}---
apiVersion: v1
kind: Secret
metadata: {name: redis-auth, namespace: default}
type: Opaque
stringData: {password: ${PASSWORD}}
${policy('shared', 'shared', SHARED_LIMIT)}${policy('open', 'open', 10)}${policy('closed', 'closed', 10, 'Closed')}`;
}

interface Replica {
  address: string;
  metrics: string;
  /** What it logged so far (its own log lines, not its access log). */
  log(): string;
}

/** The second replica: `portico proxy` on its own address, proving itself with the fleet's certificate. */
async function secondReplica(
  t: Parameters<typeof defer>[0],
  stateDir: string,
  discovery: string,
): Promise<Replica> {
  const certs = join(stateDir, 'certs');
  const fleetFile = (ext: string) => join(certs, 'fleets', `${fleetInfraName('default/eg')}.${ext}`);
  const metrics = `127.0.0.1:${await freePort()}`;
  const child = startPortico([
    'proxy',
    ...['--discovery', discovery, '--fleet', 'default/eg', '--node', 'replica-2'],
    ...['--ca-file', join(certs, 'ca.crt'), '--cert-file', fleetFile('crt'), '--key-file', fleetFile('key')],
    ...['--bind-address', REPLICA_ADDRESS, '--workers', '1', '--access-log', 'off'],
    ...['--admin-address', 'off', '--ready-address', 'off', '--metrics-address', metrics],
  ]);
  defer(t, async () => {
    child.process.kill('SIGTERM');
    await child.exited;
  });
  return { address: REPLICA_ADDRESS, metrics, log: () => child.stderr() };
}

function storeEvent(text: string, event: string): number {
  const samples = parsePrometheus(text);
  return sampleValue(samples, 'portico_rate_limit_store_events_total', { scope: 'Global', event }) ?? 0;
}

test('a Global RateLimitPolicy holds across two replicas sharing a real Redis, stopped and started under traffic', {
  skip: redisMissing(),
}, async (t) => {
  const dir = await tempDir(t, 'global-limits');
  const redis = redisServer(await freePort(), PASSWORD);
  await redis.start();
  defer(t, () => redis.close());
  await writeFile(join(dir, 'resources.yaml'), resources(await echo(t, 'backend'), redis.port));
  const stateDir = join(dir, 'state');
  const c = await startStandalone(t, { args: ['-f', dir], pool: '127.0.57.0/24', stateDir });
  const fleetAddress = await programmedAddress(c.admin, 'default', 'eg');
  const first: Replica = {
    address: fleetAddress,
    metrics: `${fleetAddress}:19001`,
    log: () => readFileSync(join(stateDir, 'logs', `${fleetInfraName('default/eg')}.log`), 'utf8'),
  };
  const replicas = [first, await secondReplica(t, stateDir, c.discovery)];
  for (const r of replicas) await untilStatus(r.address, 8080, 'www.example.com', '/', 200);

  const policies = (await adminResources(c.admin, '?kind=RateLimitPolicy')).map((p) => {
    const ancestors = (p.status as { ancestors: { conditions: { type: string; status: string }[] }[] })
      .ancestors;
    return `${p.metadata.name} ${ancestors[0]?.conditions.map((x) => `${x.type}=${x.status}`)}`;
  });
  // Accepted, not Invalid: an Invalid policy's Global rules would be Local, each replica allowing the limit.
  assert.deepEqual(policies.sort(), ['closed Accepted=True', 'open Accepted=True', 'shared Accepted=True']);

  const get = (n: number, path: string, client: string) =>
    httpRequest(8080, path, {
      address: replicas[n]!.address,
      host: 'www.example.com',
      headers: { 'x-client': client },
      timeoutMs: 5_000,
    });

  /**
   * Requests of one client alternating between the replicas until both refused: never more than the limit
   * together, and exactly the limit then (a replica refuses only with its allowance spent and Redis giving none).
   */
  const sharedLimit = async (client: string) => {
    const allowed = [0, 0];
    const refused = [false, false];
    for (let i = 0; !(refused[0] && refused[1]) && i < 3 * SHARED_LIMIT; i++) {
      const n = i % 2;
      const status = (await get(n, '/shared', client)).status;
      if (status === 200) allowed[n]!++;
      else if (status === 429) refused[n] = true;
      else assert.fail(`replica ${n}: HTTP ${status}`);
      assert.ok(allowed[0]! + allowed[1]! <= SHARED_LIMIT, `allowed ${allowed} past ${SHARED_LIMIT}`);
    }
    assert.deepEqual(refused, [true, true], `allowed ${allowed}`);
    assert.equal(allowed[0]! + allowed[1]!, SHARED_LIMIT, `allowed ${allowed}`);
    assert.ok(allowed[0]! > 0 && allowed[1]! > 0, `allowed ${allowed}: both replicas served`);
  };
  await sharedLimit('alice');

  await redis.stop();
  // Open (the default): a client far over its limit of 10 still passes on both replicas, each lease failed open.
  for (let i = 0; i < 40; i++) assert.equal((await get(i % 2, '/open', 'bob')).status, 200, `request ${i}`);
  // Closed: 429 on both replicas while Redis is down.
  for (const n of [0, 1]) assert.equal((await get(n, '/closed', 'carol')).status, 429);

  await redis.start();
  // Back: a Closed rule passes again on a replica once its client reconnected (fresh clients: none refused yet).
  let probe = 0;
  for (const n of [0, 1]) {
    await eventually(
      `replica ${n} answers the Closed rule again`,
      async () => ((await get(n, '/closed', `dave-${probe++}`)).status === 200 ? true : undefined),
      20_000,
    );
  }
  await sharedLimit('erin');

  for (const [n, r] of replicas.entries()) {
    const log = r.log();
    assert.equal(log.match(/redis 127\.0\.0\.1:\d+ failed/g)?.length ?? 0, 1, `replica ${n}: ${log}`);
    assert.equal(log.match(/redis 127\.0\.0\.1:\d+ answers again/g)?.length ?? 0, 1, `replica ${n}: ${log}`);
    assert.doesNotMatch(log, new RegExp(PASSWORD));
    const [host, port] = [r.metrics.slice(0, r.metrics.lastIndexOf(':')), r.metrics.split(':').pop()];
    const text = (await httpRequest(Number(port), '/metrics', { address: host, timeoutMs: 5_000 })).body;
    for (const event of ['failure', 'failed_open', 'failed_closed'])
      assert.ok(storeEvent(text, event) > 0, `replica ${n}: no ${event} counted`);
    // Leases of 5 on the shared rule: far fewer round trips than requests.
    assert.ok(
      storeEvent(text, 'round_trip') < SHARED_LIMIT,
      `replica ${n}: ${storeEvent(text, 'round_trip')}`,
    );
  }
  assert.doesNotMatch(c.child.stdout() + c.child.stderr(), new RegExp(PASSWORD));
});

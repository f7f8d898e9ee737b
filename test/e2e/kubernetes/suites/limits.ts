// ClientTrafficPolicy and RateLimitPolicy on the real cluster, through a real Gateway: the CRDs the chart installs
// take them, the controller watches them and says Accepted in status.ancestors, a RateLimitPolicy's Local limit
// answers 429 (with the RateLimit fields) after its requests, and a route's ClientTrafficPolicy body limit 413.
// Global (Redis) limits are not run here: docs/limits.md.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually } from '../../../cluster/kube-api.js';
import { httpRequest } from '../../../support/http.js';
import { E2E_SKIP } from '../install.js';
import { apply, echoNamespace, gateway, gatewayClass, programmedAddress, route, served } from '../traffic.js';

const NS = 'limits-e2e';
const HOST = 'limits.example.com';
/** The Gateway's name, unique among the suites: its proxy pods live in the controller's namespace. */
const GATEWAY = 'limits';
const REQUESTS = 3;
let cluster: Cluster;

const target = (kind: string, name: string) => ({ group: 'gateway.networking.k8s.io', kind, name });

/** Runs in the file's before(), once Portico is installed. */
export async function setup(c: Cluster): Promise<void> {
  cluster = c;
  await gatewayClass(cluster, 'portico', DEFAULT_CONTROLLER_NAME);
  await echoNamespace(cluster, NS);
  await gateway(cluster, NS, GATEWAY, 'portico', [{ name: 'http', port: 80 }]);
  await route(cluster, NS, 'app', { namespace: NS, name: GATEWAY }, HOST, 'echo');
  await apply(cluster, {
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'RateLimitPolicy',
    metadata: { name: 'app', namespace: NS },
    spec: {
      targetRefs: [target('HTTPRoute', 'app')],
      // Keyed by a header: the body-limit request below has its own bucket (a limit is checked before the body).
      rules: [
        {
          name: 'per-client',
          keys: [{ type: 'Header', name: 'x-client' }],
          requests: REQUESTS,
          period: '1h',
        },
      ],
    },
  } as never);
  await apply(cluster, {
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'ClientTrafficPolicy',
    metadata: { name: 'app-body', namespace: NS },
    spec: { targetRefs: [target('HTTPRoute', 'app')], limits: { maxRequestBodyBytes: 1024 } },
  } as never);
}

/** The policy's Accepted condition status as Portico wrote it for the Gateway. */
async function accepted(plural: string, name: string): Promise<string | undefined> {
  const r = await call(
    cluster,
    'GET',
    `/apis/gateway.portico.io/v1alpha1/namespaces/${NS}/${plural}/${name}`,
  );
  const ancestor = asList(r.body.status?.ancestors)[0];
  return asList(ancestor?.conditions).find((x) => x.type === 'Accepted')?.status as string | undefined;
}

test('RateLimitPolicy 429 after its requests and ClientTrafficPolicy 413 over its body limit, through a Gateway', {
  skip: E2E_SKIP,
}, async () => {
  const address = await programmedAddress(cluster, NS, GATEWAY, 120_000);
  await eventually(
    async () =>
      (await accepted('ratelimitpolicies', 'app')) === 'True' &&
      (await accepted('clienttrafficpolicies', 'app-body')) === 'True',
    'both policies Accepted',
    60_000,
  );
  // The first request served spends a token too: count from it.
  const first = await served(address, 80, HOST);
  assert.match(String(first.headers.ratelimit), /^"limits-e2e\/app\/per-client";r=\d+;t=\d+$/);
  const statuses = [first.status];
  // One proxy (all its workers) holds exactly REQUESTS; a fleet of several replicas holds it per replica.
  for (let i = 0; i < 10 && !statuses.includes(429); i++)
    statuses.push((await httpRequest(80, '/', { address, host: HOST, timeoutMs: 5000 })).status);
  assert.deepEqual(statuses.slice(0, REQUESTS), Array(REQUESTS).fill(200), statuses.join(','));
  assert.equal(statuses.at(-1), 429, statuses.join(','));

  const big = await httpRequest(80, '/', {
    address,
    host: HOST,
    method: 'POST',
    headers: { 'x-client': 'uploader' },
    body: 'x'.repeat(2000),
    timeoutMs: 5000,
  });
  assert.equal(big.status, 413);
});

// Fleet client certificates on the real cluster (Controller Namespace Mode): they live 7 days, discovery accepts
// only the certificate in the fleet's Secret, deleting the Secret revokes its certificate at once (a copy of it
// is refused from then on), and the fleet's proxies move to the reissued one without a failed request.
// Written for the lead to run with the Kubernetes e2e (`node scripts/run-tests.mjs test/e2e/kubernetes/default-mode`).
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { startDiscoveryClient } from '../../../../src/discovery/client.js';
import { fleetClientSecretName } from '../../../../src/infra/kubernetes/render.js';
import type { FleetConfig } from '../../../../src/ir/fleet-config.js';
import { fleetInfraName } from '../../../../src/ir/fleet-infra.js';
import type { Cluster } from '../../../cluster/harness.js';
import { call, eventually, type Loose } from '../../../cluster/kube-api.js';
import { assertNoFailedRequests, CONTROLLER, duringTraffic } from '../handover.js';
import { E2E_SKIP } from '../install.js';
import { echoNamespace, gateway, gatewayClass, get, programmedAddress, route, served } from '../traffic.js';

let cluster: Cluster;
let system: string;
const NS = 'fleet-certs';
const FLEET = `${NS}/gw`;
const DAY_MS = 86_400_000;

/** Runs in the file's before(), once Portico is installed in `sys`. */
export async function setup(c: Cluster, sys: string): Promise<void> {
  cluster = c;
  system = sys;
  await echoNamespace(cluster, NS);
}

const secretPath = () =>
  `/api/v1/namespaces/${system}/secrets/${fleetClientSecretName(fleetInfraName(FLEET))}`;
const decoded = (secret: Loose, key: string) =>
  Buffer.from(String(secret.data?.[key]), 'base64').toString('utf8');

/** Opens one discovery stream with `tls`; resolves with what it received and the error that closed it, if any. */
async function openWith(tls: { caPem: string; certPem: string; keyPem: string }, node: string) {
  const service = await call(cluster, 'GET', `/api/v1/namespaces/${system}/services/portico-gateway`);
  const received: FleetConfig[] = [];
  const client = startDiscoveryClient({
    address: `${String(service.body.spec?.clusterIP)}:18000`,
    fleet: FLEET,
    node,
    tls: { ...tls, serverName: `portico-gateway.${system}.svc` },
    // One attempt: a refused stream must not be retried during the test.
    backoff: { initialMs: 60_000, maxMs: 60_000 },
    apply: async (config) => {
      received.push(config);
      return { ok: true, listenerErrors: [] };
    },
  });
  return { client, received };
}

test("a fleet's certificate lives 7 days; deleting its Secret revokes it at once, and the proxies move to the new one without a failed request", {
  skip: E2E_SKIP,
}, async (t) => {
  await gatewayClass(cluster, 'portico', CONTROLLER);
  await gateway(cluster, NS, 'gw', 'portico', [{ name: 'http', port: 80 }]);
  await route(cluster, NS, 'web', { namespace: NS, name: 'gw' }, 'certs.example.com', 'echo');
  const address = await programmedAddress(cluster, NS, 'gw');
  await served(address, 80, 'certs.example.com');

  const before = (await call(cluster, 'GET', secretPath())).body;
  const held = {
    caPem: decoded(before, 'ca.crt'),
    certPem: decoded(before, 'tls.crt'),
    keyPem: decoded(before, 'tls.key'),
  };
  const cert = new X509Certificate(held.certPem);
  const life = Date.parse(cert.validTo) - Date.now();
  assert.ok(life > 6.9 * DAY_MS && life <= 7 * DAY_MS, `${life / DAY_MS} days left of a new certificate`);

  // A copy of the Secret's certificate (as a leak would give) opens the fleet's config…
  const leaked = await openWith(held, 'leaked-copy');
  t.after(() => leaked.client.stop());
  await eventually(async () => (leaked.received.length > 0 ? true : undefined), 'the copy to receive config');

  const result = await duringTraffic([{ address, port: 80, host: 'certs.example.com' }], async () => {
    // …until the Secret is deleted: the copy's stream is closed, and the controller issues a new identity.
    await call(cluster, 'DELETE', secretPath());
    await eventually(
      async () => (/UNAUTHENTICATED/.test(leaked.client.status().lastError ?? '') ? true : undefined),
      'the copy’s stream to be closed',
      30_000,
    );
    await eventually(
      async () => {
        const now = await call(cluster, 'GET', secretPath());
        return now.status === 200 && decoded(now.body, 'tls.crt') !== held.certPem ? true : undefined;
      },
      'the Secret to be issued again',
      30_000,
    );
    // The proxies kept serving their config; once the kubelet projects the new Secret they reconnect with it,
    // and a route added now is served.
    await route(cluster, NS, 'after', { namespace: NS, name: 'gw' }, 'after.example.com', 'echo');
    await eventually(
      async () => ((await get(address, 80, 'after.example.com')).status === 200 ? true : undefined),
      'a route added after the revocation to be served (the proxies reconnected with the new certificate)',
      150_000,
      500,
    );
  });
  assertNoFailedRequests(t, result);

  const again = await openWith(held, 'leaked-copy-again');
  t.after(() => again.client.stop());
  const error = await eventually(
    async () => again.client.status().lastError,
    'the copy to be refused',
    30_000,
  );
  assert.match(error, /UNAUTHENTICATED: the client certificate of fleet 'fleet-certs\/gw' is not the one/);
  assert.deepEqual(again.received, [], 'a revoked certificate receives nothing');
});

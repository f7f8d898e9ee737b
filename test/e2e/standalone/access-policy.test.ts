// AccessPolicy in standalone mode, through the real proxy from YAML files: access rules on a Gateway and on a
// route's named rule (the rule's policy replaces the Gateway's whole), statuses, the access log's reason and the
// refusal metrics, and a policy edit taken under traffic without a failed request.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fleetInfraName } from '../../../src/ir/fleet-infra.js';
import { PORTS } from '../../../src/ir/well-known.js';
import { httpRequest } from '../../support/http.js';
import { parsePrometheus } from '../../support/prometheus.js';
import { traffic } from '../../support/traffic.js';
import {
  adminResources,
  eventually,
  exampleCopy,
  programmedAddress,
  startStandalone,
  untilStatus,
} from './harness.js';

function get(address: string, path: string, from: string, headers: Record<string, string> = {}) {
  return httpRequest(8080, path, {
    address,
    host: 'www.example.com',
    localAddress: from,
    headers,
    timeoutMs: 5000,
  });
}

test('AccessPolicy files: Gateway and rule policies, statuses, log and metrics, an edit under traffic', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'access-policy', ['web', 'api']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.46.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'www.example.com', '/', 200);

  // The Gateway's policy: one client refused, with 403 and nothing more.
  assert.equal((await get(address, '/', '127.0.0.2')).status, 200);
  const refused = await get(address, '/', '127.0.0.3');
  assert.equal(refused.status, 403);
  assert.equal(refused.body, '');
  // The rule's policy replaces the Gateway's: the refused client passes there with the header, nobody without.
  assert.equal((await get(address, '/api', '127.0.0.3', { 'x-team': 'blue' })).status, 200);
  assert.equal((await get(address, '/api', '127.0.0.2')).status, 403);
  assert.equal((await get(address, '/api', '127.0.0.2', { 'x-team': 'red' })).status, 403);

  const policies = (await adminResources(c.admin)).filter((r) => r.kind === 'AccessPolicy');
  for (const p of policies) {
    const ancestors = (
      p.status as {
        ancestors: { ancestorRef: { name: string }; conditions: { type: string; status: string }[] }[];
      }
    ).ancestors;
    assert.equal(ancestors[0]?.ancestorRef.name, 'eg', p.metadata.name);
    assert.deepEqual(
      ancestors[0]?.conditions.map((x) => `${x.type}=${x.status}`),
      ['Accepted=True'],
      p.metadata.name,
    );
  }
  assert.equal(policies.length, 2);

  const log = join(stateDir, 'logs', `${fleetInfraName('default/eg')}.access.log`);
  const line = await eventually('the refusal in the access log', async () => {
    const text = await readFile(log, 'utf8').catch(() => '');
    return text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((e) => e.status === 403 && e.path === '/');
  });
  assert.equal(line.response_flags, 'access_denied');
  assert.equal(
    line.access_reason,
    'AccessPolicy default/gateway-clients blocked-client: denied by blocked-client',
  );
  const metrics = parsePrometheus(await (await fetch(`http://${address}:${PORTS.metrics}/metrics`)).text());
  const denied = metrics.find(
    (m) =>
      m.name === 'portico_proxy_auth_decisions_total' &&
      m.labels.policy === 'AccessPolicy default/api-team' &&
      m.labels.rule === 'default' &&
      m.labels.outcome === 'denied',
  );
  assert.equal(denied?.value, 2);

  // An edit under traffic: requests that pass both versions keep passing while the proxy takes the new one.
  const load = traffic(4, (agent) =>
    httpRequest(8080, '/api', {
      address,
      host: 'www.example.com',
      headers: { 'x-team': 'blue', 'x-shift': 'night' },
      agent,
      timeoutMs: 5000,
    }),
  );
  const file = join(files, 'access.yaml');
  await writeFile(
    file,
    (await readFile(file, 'utf8')).replace('value: blue', 'value: blue\n        - name: x-shift'),
  );
  await eventually('the edited rule in force', async () => {
    const r = await get(address, '/api', '127.0.0.2', { 'x-team': 'blue' });
    return r.status === 403 ? r : undefined;
  });
  const during = await load.stop();
  assert.deepEqual(during.failures, [], `${during.failures.length} of ${during.sent} failed during the edit`);
  assert.ok(during.sent > 0);
});

// BackendTLSPolicy edits through a translate cache: each gives what a translation from scratch gives, a CA that
// appears or goes moves the cluster between serving and failing closed, and a route edit with policies present
// still gives the policy's status (the full translation, not the changed-routes one).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseYamlFile } from '../../src/api/load.js';
import { buildSnapshot, type ResourceSnapshot } from '../../src/api/snapshot.js';
import type { FleetConfig } from '../../src/ir/fleet-config.js';
import { createTranslateCache, type TranslateOptions, translate } from '../../src/translate/index.js';
import { translation } from './random-edits.js';
import { withTestCertificates } from './testdata-certificates.js';

const options: TranslateOptions = {
  controllerName: 'gateway.portico.io/gatewayclass-controller',
  controllerNamespace: 'portico-gateway-system',
  deployType: 'ControllerNamespace',
};

function load(): ResourceSnapshot {
  const name = 'backend-tls.in.yaml';
  const text = withTestCertificates(readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8'));
  return buildSnapshot(parseYamlFile(name, text).objects.map((o) => o.object));
}

function cluster(fleet: FleetConfig | undefined, name: string) {
  return {
    tls: fleet?.clusters.find((c) => c.name === name)?.tls,
    endpoints: fleet?.endpoints.find((e) => e.name === name)?.endpoints,
  };
}

test('a CA ConfigMap that appears, then goes, moves its clusters from failing closed to TLS and back', () => {
  const cache = createTranslateCache();
  const base = load();
  const missing = translate(base, { ...options, cache });
  assert.equal(cluster(missing.fleets[0], 'apps/missing-ca:443').endpoints?.length, 0);
  assert.notEqual(cluster(missing.fleets[0], 'apps/missing-ca:443').tls?.refused, undefined);

  const ca = base.configMaps.find((c) => c.metadata.name === 'ca')!;
  const added = {
    ...base,
    configMaps: [...base.configMaps, { ...ca, metadata: { ...ca.metadata, name: 'does-not-exist' } }],
  };
  const served = translate(added, { ...options, cache });
  assert.deepEqual(translation(served), translation(translate(added, options)));
  const now = cluster(served.fleets[0], 'apps/missing-ca:443');
  assert.equal(now.tls?.refused, undefined);
  assert.equal(now.tls?.caPem, ca.data['ca.crt']);
  assert.deepEqual(now.endpoints, [{ address: '10.0.0.2', port: 443 }]);

  const gone = { ...added, configMaps: added.configMaps.filter((c) => c.metadata.name !== 'ca') };
  const closed = translate(gone, { ...options, cache });
  assert.deepEqual(translation(closed), translation(translate(gone, options)));
  const secure = cluster(closed.fleets[0], 'apps/secure:443');
  assert.equal(secure.endpoints?.length, 0);
  assert.match(secure.tls?.refused ?? '', /ConfigMap apps\/ca not found/);
});

test('a policy deleted: its Service is plaintext again; the newer conflicting policy takes the target over', () => {
  const cache = createTranslateCache();
  const base = load();
  translate(base, { ...options, cache });
  const without = {
    ...base,
    backendTlsPolicies: base.backendTlsPolicies.filter(
      (p) => p.metadata.name !== 'secure-https' && p.metadata.name !== 'system',
    ),
  };
  const after = translate(without, { ...options, cache });
  assert.deepEqual(translation(after), translation(translate(without, options)));
  assert.equal(cluster(after.fleets[0], 'apps/system:443').tls, undefined);
  assert.equal(cluster(after.fleets[0], 'apps/secure:443').tls?.policy, 'apps/secure-https-newer');
  const status = after.statuses.find((s) => s.kind === 'BackendTLSPolicy' && s.name === 'secure-https-newer');
  assert.ok(status !== undefined);
  const ancestors = (status.status as { ancestors: { conditions: { type: string; reason: string }[] }[] })
    .ancestors;
  assert.equal(ancestors[0]?.conditions.find((c) => c.type === 'Accepted')?.reason, 'Accepted');
});

test('a route edit with policies present keeps every policy status, as a translation from scratch', () => {
  const cache = createTranslateCache();
  const base = load();
  translate(base, { ...options, cache });
  const edited = {
    ...base,
    httpRoutes: base.httpRoutes.map((r) => ({
      ...r,
      spec: { ...r.spec, hostnames: ['edited.example.com'] },
    })),
  };
  const after = translate(edited, { ...options, cache });
  assert.deepEqual(translation(after), translation(translate(edited, options)));
  assert.equal(after.statuses.filter((s) => s.kind === 'BackendTLSPolicy').length, 8);
});

// BackendTLSPolicy verdicts and statuses as pure functions: options Portico does not read fail closed, and a
// status lists at most the API's 16 ancestors.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BackendTLSPolicy } from '../../src/api/backend-tls-policy.js';
import { backendTlsStatuses, indexBackendTlsPolicies } from '../../src/translate/backend-tls.js';

const CONTROLLER = 'gateway.portico.io/controller';
const NO_CAS = { configMaps: new Map(), clusterTrustBundles: new Map() };

function policy(options?: Record<string, string>): BackendTLSPolicy {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'BackendTLSPolicy',
    metadata: { name: 'tls', namespace: 'apps', generation: 2 },
    spec: {
      targetRefs: [{ group: '', kind: 'Service', name: 'secure' }],
      validation: { hostname: 'secure.example.com', wellKnownCACertificates: 'System' },
      ...(options === undefined ? {} : { options }),
    },
  };
}

describe('BackendTLSPolicy options', () => {
  it('accepts a policy without options', () => {
    const [verdict] = indexBackendTlsPolicies([policy()], NO_CAS).verdicts;
    assert.equal(verdict?.accepted.ok, true);
    assert.equal(verdict?.tls.refused, undefined);
  });

  it('refuses every option key, naming them, and its targets fail closed', () => {
    const index = indexBackendTlsPolicies(
      [policy({ 'example.com/min-version': '1.3', 'portico.io/ciphers': 'x' })],
      NO_CAS,
    );
    const verdict = index.verdicts[0]!;
    const message =
      "spec.options: 'example.com/min-version', 'portico.io/ciphers' not supported (Portico reads no options)";
    assert.deepEqual(verdict.accepted, { ok: false, reason: 'Invalid', message });
    assert.equal(verdict.tls.refused, message);
    assert.equal(index.holders.get('apps/secure'), verdict);
  });
});

describe('BackendTLSPolicy status ancestors', () => {
  it('lists at most 16 Gateways, the first by namespace/name', () => {
    const index = indexBackendTlsPolicies([policy()], NO_CAS);
    const gateways = Array.from({ length: 20 }, (_, i) => `edge/gw-${String(i).padStart(2, '0')}`);
    const [status] = backendTlsStatuses(index, new Map([['apps/secure', new Set(gateways)]]), CONTROLLER);
    const ancestors = (status!.status as { ancestors: { ancestorRef: { name: string } }[] }).ancestors;
    assert.equal(ancestors.length, 16);
    assert.deepEqual(
      ancestors.map((a) => a.ancestorRef.name),
      gateways.slice(0, 16).map((g) => g.split('/')[1]),
    );
  });
});

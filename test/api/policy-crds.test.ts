// The policy CRDs the chart installs are the ones scripts/policy-crds.ts writes from Portico's own schemas, so a
// file that loads in standalone mode is one the API server takes; and their CEL rules say what semantic-rules.ts does.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { crdFile, crdText, POLICY_CRDS } from '../../scripts/policy-crds.js';
import { validateObject } from '../../src/api/validate.js';

for (const p of POLICY_CRDS) {
  test(`the ${p.kind} CRD is what scripts/policy-crds.ts writes (run it after a schema change)`, () => {
    assert.equal(readFileSync(crdFile(p), 'utf8'), crdText(p));
  });
}

const target = { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'eg' };

function errorsOf(spec: Record<string, unknown>, kind = 'AccessPolicy'): string[] {
  const r = validateObject({
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind,
    metadata: { name: 'p', namespace: 'default' },
    spec,
  });
  return r.ok ? [] : r.errors.map((e) => `${e.field}: ${e.message}`);
}

test('AccessPolicy: the rules the CRD says in CEL, checked the same for files', () => {
  assert.deepEqual(errorsOf({ targetRefs: [target] }), []);
  assert.deepEqual(errorsOf({ targetRefs: [target, target] }), [
    'spec.targetRefs[1]: duplicates targetRefs[0]',
  ]);
  assert.deepEqual(errorsOf({ targetRefs: [target, { ...target, sectionName: 'http' }] }), []);
  assert.deepEqual(errorsOf({ targetRefs: [target], rules: [{ action: 'Deny', methods: ['POST'] }] }), [
    'spec.defaultAction: required when rules are given',
  ]);
  assert.deepEqual(
    errorsOf({
      targetRefs: [target],
      rules: [
        { name: 'a', action: 'Deny' },
        { name: 'a', action: 'Allow' },
      ],
      defaultAction: 'Deny',
    }),
    ['spec.rules[1].name: duplicates rules[0].name'],
  );
  assert.match(
    errorsOf({ targetRefs: [{ ...target, kind: 'Service' }] })[0] ?? '',
    /^spec\.targetRefs\[0\]\.kind/,
  );
});

test('ClientTrafficPolicy: the rules the CRD says in CEL, checked the same for files', () => {
  const ctp = (spec: Record<string, unknown>) => errorsOf(spec, 'ClientTrafficPolicy');
  const route = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'app' };
  assert.deepEqual(
    ctp({ targetRefs: [target], clientIP: { trustedCIDRs: ['10.0.0.0/8'], trustedHops: 1 } }),
    [],
  );
  assert.deepEqual(
    ctp({
      targetRefs: [target],
      clientIP: { trustedCIDRs: ['10.0.0.0/8'], trustedHops: 1, header: 'x-real-ip' },
    }),
    ['spec.clientIP: set at most one of trustedHops and header'],
  );
  assert.deepEqual(ctp({ targetRefs: [route], limits: { maxRequestBodyBytes: 10 } }), []);
  assert.deepEqual(ctp({ targetRefs: [route], limits: { maxRequestBodyBytes: 10, maxHeaders: 5 } }), [
    'spec: a policy targeting a route may set only limits.maxRequestBodyBytes',
  ]);
});

test('RateLimitPolicy: the rules the CRD says in CEL, checked the same for files', () => {
  const rlp = (spec: Record<string, unknown>) => errorsOf(spec, 'RateLimitPolicy');
  const rule = { name: 'a', requests: 5, period: '1m' };
  assert.deepEqual(rlp({ targetRefs: [target], rules: [rule] }), []);
  assert.deepEqual(rlp({ targetRefs: [target], rules: [rule, rule] }), [
    'spec.rules[1].name: duplicates rules[0].name',
  ]);
  assert.deepEqual(rlp({ targetRefs: [target], rules: [{ ...rule, period: '25h' }] }), [
    'spec.rules[0].period: must be from 1s to 24h',
  ]);
  assert.deepEqual(rlp({ targetRefs: [target], rules: [{ ...rule, scope: 'Global' }] }), [
    'spec.redis: required: rules[0] is Global',
  ]);
  assert.deepEqual(rlp({ targetRefs: [target], rules: [{ ...rule, keys: [{ type: 'Header' }] }] }), [
    'spec.rules[0].keys[0].name: required for Header and Claim, and only then',
  ]);
  assert.match(
    rlp({ targetRefs: [target], rules: [{ ...rule, period: '500ms' }] })[0] ?? '',
    /^spec\.rules\[0\]\.period/,
  );
});

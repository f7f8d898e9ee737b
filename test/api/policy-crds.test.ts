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

function errorsOf(spec: Record<string, unknown>): string[] {
  const r = validateObject({
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'AccessPolicy',
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

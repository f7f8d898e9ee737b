// The RequestMirror filter as files and `portico translate` load it: the CRD's defaults, schema and CEL rules.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatResourceError } from '../../src/api/common.js';
import { parseYamlFile } from '../../src/api/load.js';

const ROUTE = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: apps}
spec:
  parentRefs: [{name: eg}]
  rules:
  - backendRefs: [{name: web, port: 80}]
    filters:
`;

function load(filters: string) {
  return parseYamlFile('r.yaml', `${ROUTE}${filters}`);
}

test('RequestMirror loads with the CRD defaults (a Service, denominator 100), several per rule', () => {
  const loaded = load(`    - {type: RequestMirror, requestMirror: {backendRef: {name: shadow, port: 8080}}}
    - {type: RequestMirror, requestMirror: {backendRef: {name: other, port: 80}, fraction: {numerator: 1}}}
`);
  assert.deepEqual(loaded.errors, []);
  const route = loaded.objects[0]!.object;
  if (route.kind !== 'HTTPRoute') throw new Error('not an HTTPRoute');
  const [first, second] = route.spec.rules[0]!.filters;
  assert.deepEqual(first!.requestMirror, {
    backendRef: { group: '', kind: 'Service', name: 'shadow', port: 8080 },
  });
  assert.deepEqual(second!.requestMirror!.fraction, { numerator: 1, denominator: 100 });
});

test('RequestMirror CEL and schema rules: percent or fraction, a fraction at most 1, a Service port', () => {
  const errors = load(`    - type: RequestMirror
      requestMirror: {backendRef: {name: a, port: 80}, percent: 10, fraction: {numerator: 1}}
    - type: RequestMirror
      requestMirror: {backendRef: {name: a, port: 80}, fraction: {numerator: 3, denominator: 2}}
    - type: RequestMirror
      requestMirror: {backendRef: {name: a}}
    - {type: RequestMirror}
`).errors.map(formatResourceError);
  const has = (text: string) =>
    assert.ok(
      errors.some((e) => e.includes(text)),
      `${text}\n${errors.join('\n')}`,
    );
  has('filters[0].requestMirror: only one of percent or fraction may be specified');
  has('filters[1].requestMirror.fraction: numerator must be less than or equal to denominator');
  has('filters[2].requestMirror.backendRef.port: required when kind is Service');
  has('filters[3].requestMirror: required when type is RequestMirror');
  assert.ok(!errors.some((e) => e.includes('may appear only once')), errors.join('\n'));
  const schema = load(
    `    - {type: RequestMirror, requestMirror: {backendRef: {name: a, port: 80}, percent: 101}}\n`,
  ).errors;
  assert.equal(schema.length, 1, schema.map(formatResourceError).join('\n'));
});

// The HTTPRoute CORS filter as files and `portico translate` load it: the CRD's defaults, schema and CEL rules.
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

test('a CORS filter loads with the CRD defaults: max age 5, empty lists', () => {
  const loaded = load(`    - {type: CORS, cors: {allowOrigins: ["https://*.example.com"]}}\n`);
  assert.deepEqual(loaded.errors, []);
  const route = loaded.objects[0]!.object;
  if (route.kind !== 'HTTPRoute') throw new Error('not an HTTPRoute');
  assert.deepEqual(route.spec.rules[0]!.filters[0]!.cors, {
    allowOrigins: ['https://*.example.com'],
    allowMethods: [],
    allowHeaders: [],
    exposeHeaders: [],
    maxAge: 5,
  });
});

test("CORS CEL and schema rules: '*' alone, the origin pattern, cors required", () => {
  const errors = load(`    - type: CORS
      cors: {allowOrigins: ["*", "https://a.test"], allowMethods: ["*", GET], allowHeaders: [x-a]}
    - {type: CORS}
`).errors.map(formatResourceError);
  assert.ok(
    errors.some((e) => e.includes('filters[0].cors.allowOrigins: ') && e.includes("'*'")),
    errors.join('\n'),
  );
  assert.ok(
    errors.some((e) => e.includes('filters[0].cors.allowMethods: ')),
    errors.join('\n'),
  );
  assert.ok(!errors.some((e) => e.includes('filters[0].cors.allowHeaders')), errors.join('\n'));
  assert.ok(
    errors.some((e) => e.includes('filters[1].cors: required when type is CORS')),
    errors.join('\n'),
  );
  assert.ok(
    errors.some((e) => e.includes('filters[1].type: CORS may appear only once')),
    errors.join('\n'),
  );
  const schema = load(`    - {type: CORS, cors: {allowOrigins: ["ftp://a.test"], maxAge: 0}}\n`).errors.map(
    formatResourceError,
  );
  assert.ok(
    schema.some((e) => e.includes('filters[0].cors.allowOrigins[0]')),
    schema.join('\n'),
  );
  assert.ok(
    schema.some((e) => e.includes('filters[0].cors.maxAge')),
    schema.join('\n'),
  );
});

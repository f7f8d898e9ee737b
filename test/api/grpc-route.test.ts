import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatResourceError } from '../../src/api/common.js';
import { parseYamlFile } from '../../src/api/load.js';

const ROUTE = `apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: echo, namespace: apps}
spec:
  parentRefs: [{name: eg}]
`;

function errorsOf(rules: string): string[] {
  return parseYamlFile('r.yaml', `${ROUTE}  rules:\n${rules}`).errors.map(formatResourceError);
}

test('a GRPCRoute loads with the CRD defaults: Exact method and header matches, weight 1, no matches', () => {
  const loaded = parseYamlFile(
    'r.yaml',
    `${ROUTE}  rules:
  - matches: [{method: {service: echo.Echo}, headers: [{name: x-env, value: prod}]}]
    backendRefs: [{name: echo, port: 8080}]
  - backendRefs: [{name: echo, port: 8080}]
`,
  );
  assert.deepEqual(loaded.errors, []);
  const route = loaded.objects[0]!.object;
  assert.equal(route.kind, 'GRPCRoute');
  if (route.kind !== 'GRPCRoute') return;
  const [first, second] = route.spec.rules;
  assert.deepEqual(first!.matches[0], {
    method: { type: 'Exact', service: 'echo.Echo' },
    headers: [{ type: 'Exact', name: 'x-env', value: 'prod' }],
  });
  assert.deepEqual(first!.backendRefs[0], {
    group: '',
    kind: 'Service',
    name: 'echo',
    port: 8080,
    weight: 1,
    filters: [],
  });
  assert.deepEqual(second!.matches, [], 'no matches: every gRPC request');
  assert.deepEqual(route.spec.hostnames, []);
});

test("GRPCRoute CEL rules: service or method, Exact names' characters, filters once each, Service port", () => {
  assert.deepEqual(
    errorsOf(`  - matches:
    - method: {type: Exact}
    - method: {service: "echo/Echo", method: "Say.Hello"}
    - method: {type: RegularExpression, service: "echo\\\\..*", method: "S.*"}
    filters:
    - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: a, value: b}]}}
    - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: a, value: c}]}}
    - {type: ResponseHeaderModifier}
    backendRefs: [{name: echo}]
`),
    [
      "r.yaml:8: GRPCRoute apps/echo: spec.rules[0].matches[0].method: one or both of 'service' or 'method' must be specified",
      'r.yaml:9: GRPCRoute apps/echo: spec.rules[0].matches[1].method.service: must match ^\\.?[a-z_][a-z_0-9]*(\\.[a-z_][a-z_0-9]*)*$',
      'r.yaml:9: GRPCRoute apps/echo: spec.rules[0].matches[1].method.method: must match ^[A-Za-z_][A-Za-z_0-9]*$',
      'r.yaml:13: GRPCRoute apps/echo: spec.rules[0].filters[1].type: RequestHeaderModifier may appear only once',
      'r.yaml:14: GRPCRoute apps/echo: spec.rules[0].filters[2].responseHeaderModifier: required when type is ResponseHeaderModifier',
      'r.yaml:15: GRPCRoute apps/echo: spec.rules[0].backendRefs[0].port: required when kind is Service',
    ],
  );
});

test('GRPCRoute schema: filter types are an enum, header values are not empty, apiVersion is v1 only', () => {
  assert.deepEqual(
    errorsOf(`  - filters: [{type: URLRewrite}]
    matches: [{headers: [{name: x, value: ""}]}]
`),
    [
      'r.yaml:8: GRPCRoute apps/echo: spec.rules[0].matches[0].headers[0].value: must not be empty',
      'r.yaml:7: GRPCRoute apps/echo: spec.rules[0].filters[0].type: must be one of RequestHeaderModifier, ResponseHeaderModifier, RequestMirror, ExtensionRef',
    ],
  );
  const beta = parseYamlFile('r.yaml', ROUTE.replace('/v1', '/v1beta1'));
  assert.deepEqual(beta.errors.map(formatResourceError), [
    'r.yaml:1: GRPCRoute apps/echo: apiVersion: must be one of gateway.networking.k8s.io/v1 for kind GRPCRoute',
  ]);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatResourceError } from '../../src/api/common.js';
import { parseYamlFile } from '../../src/api/load.js';
import { buildSnapshot, type ResourceSnapshot, type UnusableObject } from '../../src/api/snapshot.js';
import { createTranslateCache, type ObjectStatus, translate } from '../../src/translate/index.js';

const CONTROLLER = 'gateway.portico.io/gatewayclass-controller';

// A class with parameters, an HTTPS Gateway and a route to a Service: each reference names an object that is
// not in the snapshot.
const OBJECTS = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec:
  controllerName: ${CONTROLLER}
  parametersRef: {group: gateway.portico.io, kind: DataPlaneProxy, name: params, namespace: edge}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: plain}
spec: {controllerName: ${CONTROLLER}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: edge}
spec:
  gatewayClassName: plain
  listeners:
  - {name: http, protocol: HTTP, port: 80}
  - name: https
    protocol: HTTPS
    port: 443
    tls: {certificateRefs: [{name: cert}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: edge}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  rules: [{backendRefs: [{name: api, port: 8080}]}]
`;

function snapshot(unusable: UnusableObject[]): ResourceSnapshot {
  const loaded = parseYamlFile('objects.yaml', OBJECTS);
  assert.deepEqual(loaded.errors.map(formatResourceError), []);
  return { ...buildSnapshot(loaded.objects.map((o) => o.object)), unusable };
}

function messages(statuses: ObjectStatus[]) {
  const status = (kind: string, name: string) => statuses.find((s) => s.kind === kind && s.name === name)!;
  const message = (conditions: unknown, type: string) =>
    (conditions as { type: string; message: string }[]).find((c) => c.type === type)?.message;
  const route = status('HTTPRoute', 'web').status as { parents: { conditions: unknown }[] };
  const gateway = status('Gateway', 'gw').status as { listeners: { name: string; conditions: unknown }[] };
  return {
    dataPlaneProxy: message(status('GatewayClass', 'eg').status.conditions, 'Accepted'),
    secret: message(gateway.listeners.find((l) => l.name === 'https')?.conditions, 'ResolvedRefs'),
    service: message(route.parents[0]?.conditions, 'ResolvedRefs'),
  };
}

const options = {
  controllerName: CONTROLLER,
  controllerNamespace: 'sys',
  deployType: 'ControllerNamespace' as const,
};

test('a referenced object that is missing is "not found"', () => {
  assert.deepEqual(messages(translate(snapshot([]), options).statuses), {
    dataPlaneProxy: 'DataPlaneProxy edge/params not found',
    secret:
      'certificateRefs[0]: Secret edge/cert not found (certificates are read from Secrets of type kubernetes.io/tls)',
    service: 'spec.rules[0].backendRefs[0]: Service edge/api not found',
  });
});

test('a referenced object the provider could not use: the referring object names it and gives the reason', () => {
  const unusable: UnusableObject[] = [
    {
      kind: 'DataPlaneProxy',
      namespace: 'edge',
      name: 'params',
      reason: 'spec.mergeGateways: must be true or false',
    },
    {
      kind: 'Secret',
      namespace: 'edge',
      name: 'cert',
      reason: 'data.tls.key: required for type kubernetes.io/tls',
    },
    { kind: 'Service', namespace: 'edge', name: 'api', reason: 'spec.ports[0].port: must be ≤ 65535' },
    // Same names, other kind or namespace: not the referenced objects.
    { kind: 'Service', namespace: 'other', name: 'cert', reason: 'x' },
    { kind: 'Secret', namespace: 'edge', name: 'api', reason: 'y' },
  ];
  assert.deepEqual(messages(translate(snapshot(unusable), options).statuses), {
    dataPlaneProxy: 'DataPlaneProxy edge/params cannot be used: spec.mergeGateways: must be true or false',
    secret:
      'certificateRefs[0]: Secret edge/cert cannot be used: data.tls.key: required for type kubernetes.io/tls',
    service:
      'spec.rules[0].backendRefs[0]: Service edge/api cannot be used: spec.ports[0].port: must be ≤ 65535',
  });
});

test('with a translate cache, a change of the unusable objects alone changes the messages', () => {
  const cache = createTranslateCache();
  const first = snapshot([]);
  assert.match(String(messages(translate(first, { ...options, cache }).statuses).service), /not found$/);
  const broken = {
    ...first,
    unusable: [
      { kind: 'Service', namespace: 'edge', name: 'api', reason: 'spec.ports[0].port: must be ≤ 65535' },
    ],
  };
  assert.match(String(messages(translate(broken, { ...options, cache }).statuses).service), /cannot be used/);
  assert.match(String(messages(translate(first, { ...options, cache }).statuses).service), /not found$/);
});

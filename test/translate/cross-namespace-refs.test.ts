// A reference into another namespace that no ReferenceGrant allows says RefNotPermitted, and says the same
// whether the object exists, is missing, cannot be used or is of another type: a tenant's status must not tell it
// what another namespace holds. Checked for a Gateway's certificateRefs (Secrets) and for HTTPRoute and GRPCRoute
// backendRefs (Services). Portico has no BackendTLSPolicy, so no ConfigMap is ever referenced.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatResourceError } from '../../src/api/common.js';
import { parseYamlFile } from '../../src/api/load.js';
import { buildSnapshot, type ResourceSnapshot, type UnusableObject } from '../../src/api/snapshot.js';
import { createTranslateCache, type ObjectStatus, translate } from '../../src/translate/index.js';
import { withTestCertificates } from './testdata-certificates.js';

const CONTROLLER = 'gateway.portico.io/gatewayclass-controller';
const options = {
  controllerName: CONTROLLER,
  controllerNamespace: 'sys',
  deployType: 'ControllerNamespace' as const,
};

/** Tenant objects: a Gateway whose HTTPS listener names victim/cert, and routes to victim/api. */
const TENANT = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec: {controllerName: ${CONTROLLER}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: tenant}
spec:
  gatewayClassName: eg
  listeners:
  - {name: http, protocol: HTTP, port: 80}
  - name: https
    protocol: HTTPS
    port: 443
    tls: {certificateRefs: [{name: cert, namespace: victim}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: tenant}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  rules: [{backendRefs: [{name: api, namespace: victim, port: 8080}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: rpc, namespace: tenant}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  rules: [{backendRefs: [{name: api, namespace: victim, port: 8080}]}]
`;

/** The referenced objects as they exist in the victim namespace: a valid TLS Secret and a served Service. */
const VICTIM_OBJECTS = `---
apiVersion: v1
kind: Secret
metadata: {name: cert, namespace: victim}
type: kubernetes.io/tls
data: {tls.crt: "{{certificate64 victim}}", tls.key: "{{key64 victim}}"}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: victim}
spec: {ports: [{port: 8080}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: api-1, namespace: victim, labels: {kubernetes.io/service-name: api}}
addressType: IPv4
endpoints: [{addresses: [10.0.0.1]}]
ports: [{port: 8080}]
`;

/** A Secret of another type under the referenced name: the Kubernetes provider would not even list it. */
const OPAQUE_SECRET = `---
apiVersion: v1
kind: Secret
metadata: {name: cert, namespace: victim}
type: Opaque
data: {password: aHVudGVyMg==}
`;

/** Grants in the victim namespace for other objects than the ones referenced. */
const OTHER_GRANTS = `---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: others, namespace: victim}
spec:
  from:
  - {group: gateway.networking.k8s.io, kind: Gateway, namespace: tenant}
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: tenant}
  - {group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: tenant}
  to:
  - {group: "", kind: Secret, name: other-cert}
  - {group: "", kind: Service, name: other-api}
`;

function snapshot(extra: string, unusable: UnusableObject[] = []): ResourceSnapshot {
  const loaded = parseYamlFile('objects.yaml', withTestCertificates(TENANT + extra));
  assert.deepEqual(loaded.errors.map(formatResourceError), []);
  return { ...buildSnapshot(loaded.objects.map((o) => o.object)), unusable };
}

/** The tenant's statuses: the Gateway's and its routes', as written. */
function tenantStatuses(statuses: ObjectStatus[]): Record<string, unknown> {
  const of = (kind: string, name: string) =>
    statuses.find((s) => s.kind === kind && s.namespace === 'tenant' && s.name === name)?.status;
  return { gateway: of('Gateway', 'gw'), http: of('HTTPRoute', 'web'), grpc: of('GRPCRoute', 'rpc') };
}

const UNUSABLE: UnusableObject[] = [
  {
    kind: 'Secret',
    namespace: 'victim',
    name: 'cert',
    reason: 'data.tls.key: required for type kubernetes.io/tls',
  },
  { kind: 'Service', namespace: 'victim', name: 'api', reason: 'spec.ports[0].port: must be ≤ 65535' },
];

const VARIANTS: [string, () => ResourceSnapshot][] = [
  ['missing', () => snapshot('')],
  ['present', () => snapshot(VICTIM_OBJECTS)],
  ['present but unusable', () => snapshot('', UNUSABLE)],
  ['a Secret of another type', () => snapshot(OPAQUE_SECRET)],
  ['missing, other objects granted', () => snapshot(OTHER_GRANTS)],
  ['present, other objects granted', () => snapshot(VICTIM_OBJECTS + OTHER_GRANTS)],
];

test('a reference no ReferenceGrant allows is RefNotPermitted, whatever the other namespace holds', () => {
  const texts = VARIANTS.map(([variant, make]) => {
    const statuses = tenantStatuses(translate(make(), options).statuses);
    const text = JSON.stringify(statuses);
    assert.doesNotMatch(text, /not found|cannot be used|of type|Opaque|must be/, variant);
    return [variant, text] as const;
  });
  const [first, firstText] = texts[0]!;
  for (const [variant, text] of texts) assert.equal(text, firstText, `${variant} vs ${first}`);

  const statuses = tenantStatuses(translate(snapshot(''), options).statuses);
  const listener = (
    statuses.gateway as { listeners: { name: string; conditions: unknown[] }[] }
  ).listeners.find((l) => l.name === 'https');
  assert.deepEqual(
    (listener!.conditions as { type: string; reason: string }[]).find((c) => c.type === 'ResolvedRefs'),
    {
      type: 'ResolvedRefs',
      status: 'False',
      reason: 'RefNotPermitted',
      message:
        'certificateRefs[0]: Secret victim/cert is in another namespace and no ReferenceGrant allows it',
      observedGeneration: 1,
    },
  );
  for (const kind of ['http', 'grpc'] as const) {
    const parents = (statuses[kind] as { parents: { conditions: { type: string; reason: string }[] }[] })
      .parents;
    assert.equal(
      parents[0]?.conditions.find((c) => c.type === 'ResolvedRefs')?.reason,
      'RefNotPermitted',
      kind,
    );
  }
});

test('the same holds with a translate cache, across changes of the other namespace alone', () => {
  const cache = createTranslateCache();
  const texts = VARIANTS.map(([variant, make]) => [
    variant,
    JSON.stringify(tenantStatuses(translate(make(), { ...options, cache }).statuses)),
  ]);
  for (const [variant, text] of texts) assert.equal(text, texts[0]![1], variant);
});

test('once granted, a missing object is named as missing (the tenant may know of it)', () => {
  const grant = `---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: cert, namespace: victim}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: tenant}]
  to: [{group: "", kind: Secret, name: cert}]
`;
  const text = JSON.stringify(tenantStatuses(translate(snapshot(grant), options).statuses).gateway);
  assert.match(text, /Secret victim\/cert not found/);
});

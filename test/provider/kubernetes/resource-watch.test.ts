import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultControllerConfig } from '../../../src/api/controller-config.js';
import type { ApiKind } from '../../../src/api/kinds.js';
import { createLogger } from '../../../src/platform/log-line.js';
import type { JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { createResourceWatch, type ResourceWatch } from '../../../src/provider/kubernetes/resource-watch.js';
import { SERVED_OBJECTS } from '../../api/served-objects.js';
import { createFakeKubernetesApi } from '../../support/fake-kubernetes-api.js';

/** An API server holding `objects`, whose watch events the test sends. */
function fakeApiServer(objects: JsonObject[]) {
  const api = createFakeKubernetesApi((request) => {
    assert.equal(request.method, 'GET');
    return undefined;
  });
  for (const object of objects) api.add(object);
  return {
    client: api.client,
    requested: () => api.requests.map((r) => r.path),
    send: api.send,
  };
}

async function watching(objects: JsonObject[]) {
  const server = fakeApiServer(objects);
  const log: string[] = [];
  const statusChanges: string[] = [];
  let changes = 0;
  const watch: ResourceWatch = createResourceWatch({
    client: server.client,
    config: defaultControllerConfig(),
    controllerNamespace: 'portico-gateway-system',
    onChange: () => {
      changes++;
    },
    onStatusChange: (kind, key) => statusChanges.push(`${kind} ${key}`),
    log: createLogger('debug', (line) => log.push(line)),
  });
  await watch.start();
  return { watch, server, log, changes: () => changes, statusChanges };
}

function names(watch: ResourceWatch): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [field, list] of Object.entries(watch.snapshot())) {
    if (!Array.isArray(list)) continue; // routeChanges: a hint, not a list
    out[field] = (list as { metadata: { name: string } }[]).map((o) => o.metadata.name);
  }
  return out;
}

const FLEET = 'proxy-edge-eg-1234abcd';
const SLICE = `${FLEET}-q4m8z`;

/** The EndpointSlice the controller manager makes for a Service whose pods are not ready, as served. */
const EMPTY_SLICE: JsonObject = {
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: {
    name: SLICE,
    generateName: `${FLEET}-`,
    namespace: 'portico-gateway-system',
    uid: 'u-1',
    resourceVersion: '101',
    generation: 1,
    creationTimestamp: '2026-11-23T10:00:00Z',
    labels: {
      'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      'kubernetes.io/service-name': FLEET,
    },
    ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: FLEET, uid: 'u-0', controller: true }],
  },
  addressType: 'IPv4',
  endpoints: null,
  ports: null,
};

/** The slice once a proxy pod is ready. */
const READY_SLICE: JsonObject = {
  ...EMPTY_SLICE,
  metadata: { ...(EMPTY_SLICE.metadata as JsonObject), resourceVersion: '102', generation: 2 },
  endpoints: [
    {
      addresses: ['10.244.0.7'],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: 'node-0',
      targetRef: { kind: 'Pod', namespace: 'portico-gateway-system', name: `${FLEET}-5d9c7-abcde`, uid: 'p' },
    },
  ],
  ports: [{ name: 'http', port: 10080, protocol: 'TCP' }],
};

/** Scaled to zero: the controller manager empties the endpoints and keeps the ports. */
const SCALED_TO_ZERO_SLICE: JsonObject = {
  ...READY_SLICE,
  metadata: { ...(EMPTY_SLICE.metadata as JsonObject), resourceVersion: '103', generation: 3 },
  endpoints: null,
};

// The least the API server serves of each kind: no optional field that Go leaves out when empty.
const MINIMAL: JsonObject[] = [
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'external', namespace: 'edge', uid: 'u', resourceVersion: '1' },
    spec: { type: 'ExternalName', externalName: 'example.com', sessionAffinity: 'None' },
    status: { loadBalancer: {} },
  },
  {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'empty', namespace: 'edge', uid: 'u', resourceVersion: '1' },
    type: 'Opaque',
  },
  {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'bare', uid: 'u', resourceVersion: '1' },
    spec: {},
    status: {},
  },
  {
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'DataPlaneProxy',
    metadata: { name: 'plain', namespace: 'edge', uid: 'u', resourceVersion: '1', generation: 1 },
    spec: { mergeGateways: false },
  },
];

test('objects as the API server serves them, with empty lists as null, are all in the snapshot; nothing is logged', async () => {
  const served = [...Object.values(SERVED_OBJECTS), EMPTY_SLICE, ...MINIMAL];
  const { watch, log } = await watching(served);
  try {
    assert.deepEqual(log, []);
    const expected: Record<string, string[]> = {};
    const fields: Record<ApiKind, string> = {
      GatewayClass: 'gatewayClasses',
      Gateway: 'gateways',
      ListenerSet: 'listenerSets',
      HTTPRoute: 'httpRoutes',
      GRPCRoute: 'grpcRoutes',
      TLSRoute: 'tlsRoutes',
      TCPRoute: 'tcpRoutes',
      UDPRoute: 'udpRoutes',
      ReferenceGrant: 'referenceGrants',
      Service: 'services',
      EndpointSlice: 'endpointSlices',
      Namespace: 'namespaces',
      Secret: 'secrets',
      ConfigMap: 'configMaps',
      ClusterTrustBundle: 'clusterTrustBundles',
      BackendTLSPolicy: 'backendTlsPolicies',
      DataPlaneProxy: 'dataPlaneProxies',
      AccessPolicy: 'accessPolicies',
      ClientTrafficPolicy: 'clientTrafficPolicies',
      RateLimitPolicy: 'rateLimitPolicies',
    };
    for (const field of Object.values(fields)) expected[field] = [];
    for (const o of served) {
      // Only TLS Secrets are listed (a field selector): the API server never sends the others.
      if (o.kind === 'Secret' && o.type !== 'kubernetes.io/tls') continue;
      expected[fields[o.kind as ApiKind]]!.push(String((o.metadata as JsonObject).name));
    }
    const actual = names(watch);
    for (const field of Object.keys(expected)) {
      assert.deepEqual([...(actual[field] ?? [])].sort(), [...expected[field]!].sort(), field);
    }
    const slice = watch.snapshot().endpointSlices.find((s) => s.metadata.name === SLICE);
    assert.deepEqual(slice?.endpoints, []);
    assert.deepEqual(slice?.ports, []);
    assert.equal(
      watch.snapshot().secrets.find((s) => s.metadata.name === 'empty'),
      undefined,
    );
  } finally {
    watch.stop();
  }
});

test('a fleet Service starting, scaled to zero and back: its slice is read each time, and nothing is logged', async () => {
  const { watch, server, log, changes } = await watching([EMPTY_SLICE]);
  const endpoints = () =>
    watch.snapshot().endpointSlices.find((s) => s.metadata.name === SLICE)?.endpoints.length;
  try {
    assert.equal(endpoints(), 0, 'a fresh fleet: no endpoints yet');
    server.send('MODIFIED', READY_SLICE);
    assert.equal(endpoints(), 1, 'a proxy ready');
    server.send('MODIFIED', SCALED_TO_ZERO_SLICE);
    assert.equal(endpoints(), 0, 'scaled to zero');
    server.send('MODIFIED', {
      ...READY_SLICE,
      metadata: { ...(READY_SLICE.metadata as JsonObject), resourceVersion: '104' },
    });
    assert.equal(endpoints(), 1, 'scaled back');
    assert.equal(changes(), 4, 'the first list and three changes');
    assert.deepEqual(log, []);
  } finally {
    watch.stop();
  }
});

/** The sample Gateway whose namespace selector has `operator`: the CRD admits any string there. */
function gatewayWithOperator(operator: string, resourceVersion: string): JsonObject {
  const gateway = structuredClone(SERVED_OBJECTS.Gateway) as JsonObject & {
    metadata: JsonObject;
    spec: {
      listeners: { allowedRoutes: { namespaces: { selector: { matchExpressions: JsonObject[] } } } }[];
    };
  };
  gateway.metadata.resourceVersion = resourceVersion;
  gateway.spec.listeners[0]!.allowedRoutes.namespaces.selector.matchExpressions[0]!.operator = operator;
  return gateway;
}

const OPERATOR = 'spec.listeners[0].allowedRoutes.namespaces.selector.matchExpressions[0].operator';

test('an object Portico cannot use is logged once per change with its name and reason, and listed as unusable', async () => {
  const { watch, server, log } = await watching([gatewayWithOperator('in', '1')]);
  try {
    const reason = `${OPERATOR}: must be one of In, NotIn, Exists, DoesNotExist`;
    assert.deepEqual(log, [`warn ignoring invalid object Gateway edge/eg: ${reason}`]);
    assert.deepEqual(watch.snapshot().gateways, []);
    const unusable = watch.snapshot().unusable;
    assert.deepEqual(unusable, [{ kind: 'Gateway', namespace: 'edge', name: 'eg', reason }]);
    assert.equal(watch.snapshot().unusable, unusable, 'the same list while nothing changed');
    server.send('ADDED', SERVED_OBJECTS.HTTPRoute!);
    assert.equal(watch.snapshot().httpRoutes.length, 1);
    assert.equal(watch.snapshot().unusable, unusable, 'the same list after a change of another object');

    // Written again with no change that counts (our own status write): no second line.
    server.send('MODIFIED', { ...gatewayWithOperator('in', '2'), status: { conditions: [] } });
    assert.equal(log.length, 1);
    // Changed and still unusable: one line for the new content.
    server.send('MODIFIED', gatewayWithOperator('notin', '3'));
    assert.deepEqual(log.slice(1), [
      `warn ignoring invalid object Gateway edge/eg: ${OPERATOR}: must be one of In, NotIn, Exists, DoesNotExist`,
    ]);
    // Fixed: used, and no longer unusable.
    server.send('MODIFIED', gatewayWithOperator('NotIn', '4'));
    assert.deepEqual(
      watch.snapshot().gateways.map((g) => g.metadata.name),
      ['eg'],
    );
    assert.deepEqual(watch.snapshot().unusable, []);
    // Broken again, then deleted: gone from both.
    server.send('MODIFIED', gatewayWithOperator('in', '5'));
    assert.equal(watch.snapshot().unusable.length, 1);
    server.send('DELETED', gatewayWithOperator('in', '6'));
    assert.deepEqual(watch.snapshot().unusable, []);
    assert.deepEqual(watch.snapshot().gateways, []);
    assert.equal(log.length, 3);
  } finally {
    watch.stop();
  }
});

test('only TLS Secrets are listed, and of each only its certificate keys: other data and annotations are neither kept nor a change', async () => {
  const tls = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: 'www-cert',
      namespace: 'edge',
      uid: 'u1',
      resourceVersion: '5',
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"data":{"tls.key":"a2V5"}}' },
      managedFields: [{ manager: 'kubectl' }],
    },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': 'Y2VydA==', 'tls.key': 'a2V5', 'backup.tar': 'QUFBQQ==' },
  };
  const { watch, server, changes } = await watching([tls]);
  try {
    assert.ok(
      server.requested().some((p) => p.endsWith('/secrets?fieldSelector=type%3Dkubernetes.io%2Ftls')),
    );
    const raw = watch.raw('Secret', 'edge/www-cert');
    assert.deepEqual(Object.keys((raw?.data ?? {}) as JsonObject).sort(), ['tls.crt', 'tls.key']);
    assert.equal((raw?.metadata as JsonObject | undefined)?.annotations, undefined);
    assert.equal((raw?.metadata as JsonObject | undefined)?.managedFields, undefined);
    const before = changes();
    // An annotation or an unread key changing is no change.
    server.send('MODIFIED', {
      ...tls,
      metadata: { ...tls.metadata, resourceVersion: '6', annotations: { note: 'edited' } },
      data: { ...tls.data, 'backup.tar': 'QkJCQg==' },
    });
    assert.equal(changes(), before);
    // The certificate changing is one.
    server.send('MODIFIED', {
      ...tls,
      metadata: { ...tls.metadata, resourceVersion: '7' },
      data: { ...tls.data, 'tls.crt': 'bmV3' },
    });
    assert.equal(changes(), before + 1);
  } finally {
    watch.stop();
  }
});

test('a route whose status alone changed is a status change, not a change: the status sink checks it again without a pass', async () => {
  const route = SERVED_OBJECTS.HTTPRoute as JsonObject;
  const meta = route.metadata as JsonObject;
  const { watch, server, changes, statusChanges } = await watching([route]);
  try {
    const before = changes();
    const overwritten = { ...route, metadata: { ...meta, resourceVersion: '900' }, status: { parents: [] } };
    server.send('MODIFIED', overwritten);
    assert.deepEqual(statusChanges, [`HTTPRoute ${String(meta.namespace)}/${String(meta.name)}`]);
    assert.equal(changes(), before, 'no pass for it');
    // An edit of the route itself is a change as before, and no status change.
    server.send('MODIFIED', {
      ...route,
      metadata: { ...meta, resourceVersion: '901' },
      spec: { hostnames: ['edited.example.com'] },
    });
    assert.equal(changes(), before + 1, 'a spec change is a change');
    assert.equal(statusChanges.length, 1);
  } finally {
    watch.stop();
  }
});

test('Secrets labelled as Portico credentials are listed whole, beside TLS Secrets, each once; other Secrets never', async () => {
  const secret = (name: string, type: string, labelled: boolean, data: JsonObject): JsonObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace: 'edge',
      uid: name,
      resourceVersion: '5',
      ...(labelled ? { labels: { 'gateway.portico.io/credentials': 'true' } } : {}),
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({ data }) },
    },
    type,
    data,
  });
  const htpasswd = secret('dashboard-users', 'Opaque', true, { '.htpasswd': 'YWxpY2U6e1NIQX0=' });
  const { watch, server, changes } = await watching([
    secret('www-cert', 'kubernetes.io/tls', false, { 'tls.crt': 'Y2VydA==', 'tls.key': 'a2V5' }),
    htpasswd,
    secret('database', 'Opaque', false, { password: 'aHVudGVyMg==' }),
    secret('labelled-cert', 'kubernetes.io/tls', true, {
      'tls.crt': 'Y2VydA==',
      'tls.key': 'a2V5',
      'jwks.json': 'e30=',
    }),
  ]);
  try {
    assert.ok(
      server
        .requested()
        .some((p) => p.endsWith('/secrets?labelSelector=gateway.portico.io%2Fcredentials%3Dtrue')),
    );
    // The unlabelled Opaque Secret is never sent; the labelled TLS one, which both lists return, is there once.
    assert.deepEqual(
      watch
        .snapshot()
        .secrets.map((s) => s.metadata.name)
        .sort(),
      ['dashboard-users', 'labelled-cert', 'www-cert'],
    );
    // A credentials Secret keeps every key (policies name their own), and no annotation: kubectl's copy of the
    // data is never held twice.
    const raw = watch.raw('Secret', 'edge/dashboard-users');
    assert.deepEqual(raw?.data, { '.htpasswd': 'YWxpY2U6e1NIQX0=' });
    assert.equal((raw?.metadata as JsonObject | undefined)?.annotations, undefined);
    assert.deepEqual(
      Object.keys((watch.raw('Secret', 'edge/labelled-cert')?.data ?? {}) as JsonObject).sort(),
      ['jwks.json', 'tls.crt', 'tls.key'],
    );
    // A new password is a change.
    const before = changes();
    server.send('MODIFIED', {
      ...htpasswd,
      metadata: { ...(htpasswd.metadata as JsonObject), resourceVersion: '6' },
      data: { '.htpasswd': 'Ym9iOntTSEF9' },
    });
    assert.equal(changes(), before + 1);
    assert.equal(
      watch.snapshot().secrets.find((s) => s.metadata.name === 'dashboard-users')?.data?.['.htpasswd'],
      'Ym9iOntTSEF9',
    );
  } finally {
    watch.stop();
  }
});

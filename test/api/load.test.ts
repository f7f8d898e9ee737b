import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { formatResourceError } from '../../src/api/common.js';
import { loadPaths, parseYamlFile } from '../../src/api/load.js';
import { validateObject } from '../../src/api/validate.js';

const GATEWAY = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: eg
spec:
  gatewayClassName: eg
  listeners:
  - name: http
    protocol: HTTP
    port: 80
`;

test('a valid Gateway loads into namespace default with CRD defaults applied', () => {
  const r = parseYamlFile('gw.yaml', GATEWAY);
  assert.deepEqual(r.errors, []);
  assert.equal(r.objects.length, 1);
  const o = r.objects[0]!;
  assert.deepEqual(o.source, { file: 'gw.yaml', line: 1 });
  assert.equal(o.object.kind, 'Gateway');
  assert.equal(o.object.metadata.namespace, 'default');
  if (o.object.kind !== 'Gateway') throw new Error('not a Gateway');
  assert.deepEqual(o.object.spec.listeners[0]!.allowedRoutes, { namespaces: { from: 'Same' } });
});

test('an error names file, line of the field, object and field path', () => {
  const r = parseYamlFile('gw.yaml', GATEWAY.replace('port: 80', 'port: 70000'));
  assert.deepEqual(r.errors.map(formatResourceError), [
    'gw.yaml:10: Gateway default/eg: spec.listeners[0].port: must be ≤ 65535',
  ]);
  assert.deepEqual(r.errors[0], {
    file: 'gw.yaml',
    line: 10,
    object: 'Gateway default/eg',
    field: 'spec.listeners[0].port',
    message: 'must be ≤ 65535',
  });
});

test('a missing field is reported at its parent line', () => {
  const r = parseYamlFile('gw.yaml', GATEWAY.replace('    port: 80\n', ''));
  assert.deepEqual(r.errors.map(formatResourceError), [
    'gw.yaml:8: Gateway default/eg: spec.listeners[0].port: required',
  ]);
});

test('one bad object does not stop the others; unknown kinds are errors', () => {
  const text = `${GATEWAY}---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: apps}
spec:
  hostnames: ["bad_host"]
---
apiVersion: v1
kind: Service
metadata: {name: s, namespace: apps}
spec:
  ports: [{port: 80}]
`;
  const r = parseYamlFile('all.yaml', text);
  assert.deepEqual(
    r.objects.map((o) => `${o.object.kind} ${o.object.metadata.name} @${o.source?.line}`),
    ['Gateway eg @1', 'Service s @22'],
  );
  assert.deepEqual(r.errors.map(formatResourceError), [
    "all.yaml:13: Widget w: kind: unknown kind 'Widget'",
    "all.yaml:20: HTTPRoute apps/r: spec.hostnames[0]: 'bad_host' is not a valid hostname (lower case, optional leading '*.', no port)",
  ]);
});

test('a hostname with a port is rejected (ports never take part in hostname matching)', () => {
  const r = validateObject({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'r', namespace: 'apps' },
    spec: { hostnames: ['a.example.com:8080'] },
  });
  assert.equal(r.ok, false);
  if (!r.ok) assert.equal(r.errors[0]!.field, 'spec.hostnames[0]');
});

test('a reserved or malformed address routability is refused in words, naming the field', () => {
  for (const routability of ['k8s.io/value', 'gateway.networking.k8s.io/value', 'Public']) {
    const r = validateObject({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'g', namespace: 'apps' },
      spec: {
        gatewayClassName: 'eg',
        addresses: [{ type: 'IPAddress', routability }],
        listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }],
      },
    });
    assert.equal(r.ok, false, routability);
    if (!r.ok) {
      assert.equal(r.errors[0]!.field, 'spec.addresses[0].routability');
      assert.match(r.errors[0]!.message, /must be empty, Cluster, or prefix\/path/);
    }
  }
});

test('YAML syntax errors name the line and keep later documents', () => {
  const text = `apiVersion: v1\nkind: Service\nmetadata: {name: a\n---\n${GATEWAY}`;
  const r = parseYamlFile('broken.yaml', text);
  assert.equal(r.objects.length, 1);
  assert.equal(r.errors.length, 1);
  assert.equal(r.errors[0]!.file, 'broken.yaml');
  assert.match(formatResourceError(r.errors[0]!), /^broken\.yaml:[34]: YAML: /);
});

test('CEL rules: Terminate needs certificateRefs or options, Service backends need a port, apiVersion must fit the kind', () => {
  const https = GATEWAY.replace('protocol: HTTP', 'protocol: HTTPS');
  const terminate = parseYamlFile('h.yaml', `${https}    tls: {mode: Terminate}\n`);
  assert.deepEqual(terminate.errors.map(formatResourceError), [
    'h.yaml:11: Gateway default/eg: spec.listeners[0].tls.certificateRefs: must have at least 1 item when mode is Terminate and tls.options is empty',
  ]);
  // The CRD admits both (no CEL rule needs tls on HTTPS): the translator reports such a listener instead.
  assert.deepEqual(parseYamlFile('h.yaml', https).errors, []);
  assert.deepEqual(parseYamlFile('h.yaml', `${https}    tls: {options: {example.com/x: y}}\n`).errors, []);
  const route = validateObject({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'r' },
    spec: { rules: [{ backendRefs: [{ name: 's' }] }] },
  });
  assert.equal(route.ok, false);
  if (!route.ok)
    assert.deepEqual(route.errors.map(formatResourceError), [
      'HTTPRoute default/r: spec.rules[0].backendRefs[0].port: required when kind is Service',
    ]);
  const version = validateObject({ apiVersion: 'v1', kind: 'Gateway', metadata: { name: 'g' } });
  assert.equal(version.ok, false);
  if (!version.ok)
    assert.match(version.errors[0]!.message, /must be one of gateway\.networking\.k8s\.io\/v1/);
});

test('shapes the Gateway API CRDs admit load: an address without a value, any name to remove', () => {
  const gateway = parseYamlFile('a.yaml', `${GATEWAY}  addresses: [{type: IPAddress}]\n`);
  assert.deepEqual(gateway.errors, []);
  const route = validateObject({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'r' },
    spec: {
      rules: [
        {
          filters: [
            { type: 'RequestHeaderModifier', requestHeaderModifier: { remove: ['no header name', ''] } },
          ],
        },
      ],
    },
  });
  assert.equal(route.ok, true, JSON.stringify(route));
});

test('enum errors list the allowed values', () => {
  const r = parseYamlFile(
    'e.yaml',
    GATEWAY.replace('    port: 80\n', '    port: 80\n    allowedRoutes: {namespaces: {from: Everywhere}}\n'),
  );
  assert.deepEqual(r.errors.map(formatResourceError), [
    'e.yaml:11: Gateway default/eg: spec.listeners[0].allowedRoutes.namespaces.from: must be one of All, Same, Selector',
  ]);
});

test('objects from the API server: Date timestamps become RFC 3339 text', () => {
  const r = validateObject({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'n', creationTimestamp: new Date('2025-01-02T03:04:05Z') },
  });
  assert.equal(r.ok, true);
  if (r.ok) assert.equal(r.object.metadata.creationTimestamp, '2025-01-02T03:04:05Z');
});

test('loadPaths reads directories recursively (.yaml, .yml, .json) and reports unreadable paths', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-load-'));
  mkdirSync(join(dir, 'sub'));
  writeFileSync(join(dir, 'a.yaml'), GATEWAY);
  writeFileSync(
    join(dir, 'sub', 'b.json'),
    JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } }),
  );
  writeFileSync(join(dir, 'sub', 'c.yml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: y}\n');
  writeFileSync(join(dir, 'notes.txt'), 'not yaml: [');
  const r = await loadPaths([dir, join(dir, 'missing.yaml')]);
  assert.deepEqual(
    r.objects.map((o) => o.object.metadata.name),
    ['eg', 'x', 'y'],
  );
  assert.equal(r.errors.length, 1);
  assert.match(formatResourceError(r.errors[0]!), /missing\.yaml: cannot read: ENOENT/);
});

test('a duplicate object (same kind, namespace and name) is an error; the first one is kept', () => {
  const r = parseYamlFile('dup.yaml', `${GATEWAY}---\n${GATEWAY.replace('port: 80', 'port: 81')}`);
  assert.equal(r.objects.length, 1);
  assert.deepEqual(r.errors.map(formatResourceError), [
    'dup.yaml:12: Gateway default/eg: duplicate; the one at dup.yaml:1 is used',
  ]);
});

test('objects from the API server: an existing status (with Dates) is kept, not validated', () => {
  const r = validateObject({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name: 'eg' },
    spec: { controllerName: 'gateway.portico.io/gatewayclass-controller' },
    status: { conditions: [{ type: 'Accepted', status: 'True', lastTransitionTime: new Date(0) }] },
  });
  assert.equal(r.ok, true);
});

test('loadPaths reads regular files only: a FIFO, named or found in a directory, is reported and never opened', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-load-'));
  writeFileSync(join(dir, 'a.yaml'), GATEWAY);
  // Nothing ever writes to it: reading it would block for ever.
  execFileSync('mkfifo', [join(dir, 'b.yaml')]);
  const r = await loadPaths([dir, join(dir, 'b.yaml')]);
  assert.deepEqual(
    r.objects.map((o) => o.object.metadata.name),
    ['eg'],
  );
  assert.deepEqual(r.errors.map(formatResourceError), [
    `${join(dir, 'b.yaml')}: a FIFO, not a regular file: not read`,
    `${join(dir, 'b.yaml')}: a FIFO, not a regular file: not read`,
  ]);
});

test('unknown or misspelled fields are errors naming the field path, with the closest declared field', () => {
  const route = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  parentRefs: [{name: eg}]
  hostname: [a.example.com]
  rules:
  - matchs: [{path: {value: /api}}]
    backendRef: [{name: s, port: 80}]
`;
  const r = parseYamlFile('route.yaml', route);
  assert.equal(r.objects.length, 0);
  assert.deepEqual(r.errors.map(formatResourceError), [
    "route.yaml:6: HTTPRoute default/r: spec.hostname: unknown field (did you mean 'hostnames'?)",
    "route.yaml:8: HTTPRoute default/r: spec.rules[0].matchs: unknown field (did you mean 'matches'?)",
    "route.yaml:9: HTTPRoute default/r: spec.rules[0].backendRef: unknown field (did you mean 'backendRefs'?)",
  ]);
  const nested = parseYamlFile(
    'gw.yaml',
    GATEWAY.replace('    port: 80\n', '    port: 80\n    colour: blue\n'),
  );
  assert.deepEqual(nested.errors.map(formatResourceError), [
    'gw.yaml:11: Gateway default/eg: spec.listeners[0].colour: unknown field',
  ]);
});

test('fields Kubernetes adds (managedFields, status…) and Gateway API fields Portico does not implement are admitted', () => {
  const r = parseYamlFile(
    'kubectl.yaml',
    `apiVersion: v1
kind: Service
metadata:
  name: s
  managedFields: [{manager: kubectl}]
  ownerReferences: []
spec:
  ports: [{port: 80, nodePort: 30080}]
  sessionAffinity: None
  ipFamilies: [IPv4]
status: {loadBalancer: {}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  rules: [{sessionPersistence: {sessionName: x}}]
`,
  );
  assert.deepEqual(r.errors, []);
  assert.equal(r.objects.length, 2);
});

test('objects from the API server: fields this schema does not declare are not rejected', () => {
  const raw = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'r', managedFields: [{ manager: 'kubectl' }], someFutureField: 1 },
    spec: { rules: [{ futureRuleField: { x: 1 } }] },
    status: { parents: [] },
  };
  assert.equal(validateObject(raw, undefined, { unknownFields: 'ignore' }).ok, true);
  const strict = validateObject(raw);
  assert.equal(strict.ok, false);
  if (!strict.ok) {
    assert.deepEqual(
      strict.errors.map((e) => e.field),
      ['metadata.someFutureField', 'spec.rules[0].futureRuleField'],
    );
  }
});

test('v1.7 CEL rule: a rule name appears once in an HTTPRoute or a GRPCRoute', () => {
  for (const kind of ['HTTPRoute', 'GRPCRoute']) {
    const route = validateObject({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind,
      metadata: { name: 'r' },
      spec: { rules: [{ name: 'a' }, { name: 'b' }, {}, { name: 'a' }] },
    });
    assert.equal(route.ok, false, kind);
    if (!route.ok)
      assert.deepEqual(route.errors.map(formatResourceError), [
        `${kind} default/r: spec.rules[3].name: rule name must be unique within the route; same as rules[0]`,
      ]);
    const distinct = validateObject({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind,
      metadata: { name: 'r' },
      spec: { rules: [{ name: 'a' }, { name: 'b' }, {}, {}] },
    });
    assert.equal(distinct.ok, true, kind);
  }
});

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Kind, type TSchema } from '@sinclair/typebox';
import { parse } from 'yaml';
import { formatResourceError } from '../../src/api/common.js';
import { type ApiKind, isApiKind, KINDS } from '../../src/api/kinds.js';
import { parseYamlFile } from '../../src/api/load.js';
import { formatFieldPath } from '../../src/api/schema-errors.js';
import { SERVED_BY_API_SERVER, type ValidationResult, validateObject } from '../../src/api/validate.js';
import { SERVED_OBJECTS } from './served-objects.js';

type Path = (string | number)[];
type Json = Record<string, unknown>;

function isJson(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// The upstream schema of each kind. Gateway API and DataPlaneProxy: the CRDs the chart installs.
const CRD_FILES: Partial<Record<ApiKind, string>> = {
  GatewayClass: 'charts/gateway-helm/gateway-api/gateway.networking.k8s.io_gatewayclasses.yaml',
  Gateway: 'charts/gateway-helm/gateway-api/gateway.networking.k8s.io_gateways.yaml',
  ListenerSet: 'charts/gateway-helm/gateway-api/gateway.networking.k8s.io_listenersets.yaml',
  HTTPRoute: 'charts/gateway-helm/gateway-api/gateway.networking.k8s.io_httproutes.yaml',
  GRPCRoute: 'charts/gateway-helm/gateway-api/gateway.networking.k8s.io_grpcroutes.yaml',
  ReferenceGrant: 'charts/gateway-helm/gateway-api/gateway.networking.k8s.io_referencegrants.yaml',
  DataPlaneProxy: 'charts/gateway-helm/crds/gateway.portico.io_dataplaneproxies.yaml',
};

// Core kinds: the fields k8s.io/api marks +required (every other field of these types is +optional).
const CORE_REQUIRED: Partial<Record<ApiKind, string[]>> = {
  Service: ['spec.ports[].port'],
  EndpointSlice: ['addressType', 'endpoints[].addresses'],
  // Validation requires tls.crt and tls.key in a kubernetes.io/tls Secret, the type of the sample.
  Secret: ['data'],
  Namespace: [],
  ClusterTrustBundle: ['spec', 'spec.trustBundle'],
};

// Every kind: type and name; a namespaced object is always served with its namespace.
const ALWAYS_REQUIRED = ['apiVersion', 'kind', 'metadata', 'metadata.name', 'metadata.namespace'];

// Fields the CRD declares optional but a CEL rule of the CRD requires in these samples.
const CEL_REQUIRED = [
  'spec.rules[].backendRefs[].port',
  'spec.rules[].filters[].requestHeaderModifier',
  'spec.rules[].backendRefs[].filters[].responseHeaderModifier',
];

/** `spec.rules[].backendRefs[].port`: the field path with every list index left out. */
function pattern(path: Path): string {
  return path.map((p, i) => (typeof p === 'number' ? '[]' : i === 0 ? p : `.${p}`)).join('');
}

const crds = new Map<ApiKind, Json>();

function crdSchema(kind: ApiKind, apiVersion: string): Json {
  let crd = crds.get(kind);
  if (crd === undefined) {
    crd = parse(readFileSync(CRD_FILES[kind]!, 'utf8')) as Json;
    crds.set(kind, crd);
  }
  const versions = (crd.spec as { versions: { name: string; schema: { openAPIV3Schema: Json } }[] }).versions;
  const version = versions.find((v) => apiVersion.endsWith(`/${v.name}`));
  if (version === undefined) throw new Error(`${kind}: no CRD version for ${apiVersion}`);
  return version.schema.openAPIV3Schema;
}

/** Whether the upstream schema requires the field at `path`. */
function upstreamRequires(kind: ApiKind, apiVersion: string, path: Path): boolean {
  const at = pattern(path);
  if (ALWAYS_REQUIRED.includes(at) || CEL_REQUIRED.includes(at)) return true;
  const core = CORE_REQUIRED[kind];
  if (core !== undefined) return core.includes(at);
  let schema: Json | undefined = crdSchema(kind, apiVersion);
  let parent: Json | undefined;
  for (const step of path) {
    parent = schema;
    schema = (typeof step === 'number' ? schema?.items : (schema?.properties as Json | undefined)?.[step]) as
      | Json
      | undefined;
  }
  const last = path.at(-1);
  return typeof last === 'string' && ((parent?.required as string[] | undefined) ?? []).includes(last);
}

/** Portico's schema of the field at `path`; an Unknown field is admitted whatever it holds. */
function schemaAt(schema: TSchema, path: Path): TSchema {
  let s = schema;
  for (const step of path) {
    if (s[Kind] === 'Unknown') return s;
    s = (typeof step === 'number' ? s.items : s.properties[step]) as TSchema;
  }
  return s;
}

/**
 * Every field the sample sets that the upstream schema lets be absent. Maps (labels, selectors, data) hold
 * entries, not fields; inside a field Portico does not read (Unknown: status, managedFields…) nothing is visited.
 */
function optionalFields(kind: ApiKind, sample: Json): Path[] {
  const apiVersion = String(sample.apiVersion);
  const schema = KINDS[kind].schema;
  const out: Path[] = [];
  const visit = (value: unknown, path: Path): void => {
    if (path.length > 0) {
      const s = schemaAt(schema, path);
      if (s[Kind] === 'Unknown' || s[Kind] === 'Record') return;
    }
    if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) visit(item, [...path, i]);
    } else if (isJson(value)) {
      for (const [name, field] of Object.entries(value)) {
        const at = [...path, name];
        if (!upstreamRequires(kind, apiVersion, at)) out.push(at);
        visit(field, at);
      }
    }
  };
  visit(sample, []);
  return out;
}

function withField(sample: Json, path: Path, value: null | undefined): Json {
  const copy = structuredClone(sample);
  let parent: unknown = copy;
  for (const step of path.slice(0, -1)) parent = (parent as Record<string | number, unknown>)[step];
  const last = path.at(-1) as string;
  if (value === undefined) delete (parent as Json)[last];
  else (parent as Json)[last] = value;
  return copy;
}

function errorsOf(result: ValidationResult): string[] {
  return result.ok ? [] : result.errors.map(formatResourceError);
}

// A file may say `creationTimestamp: null` as kubectl writes it; every other null stays an error in a file.
const NULL_IN_FILES_TOO = ['metadata.creationTimestamp'];

for (const [kind, sample] of Object.entries(SERVED_OBJECTS)) {
  test(`${kind}: each optional field served as null reads as absent; in a file the null is still an error`, () => {
    assert.ok(isApiKind(kind));
    assert.deepEqual(errorsOf(validateObject(sample)), [], 'the sample is valid as a file too');
    const fields = optionalFields(kind, sample);
    assert.ok(fields.length >= 5, `${kind}: ${fields.length} optional fields in the sample`);
    for (const path of fields) {
      const at = formatFieldPath(path);
      const servedNull = validateObject(withField(sample, path, null), undefined, SERVED_BY_API_SERVER);
      const servedAbsent = validateObject(
        withField(sample, path, undefined),
        undefined,
        SERVED_BY_API_SERVER,
      );
      assert.deepEqual(errorsOf(servedNull), [], `${kind} ${at}: null`);
      assert.deepEqual(servedNull, servedAbsent, `${kind} ${at}: null reads as absent`);
      const file = validateObject(withField(sample, path, null));
      const admitsAnything = schemaAt(KINDS[kind].schema, path)[Kind] === 'Unknown';
      if (admitsAnything || NULL_IN_FILES_TOO.includes(at)) assert.deepEqual(errorsOf(file), [], at);
      else {
        assert.equal(file.ok, false, `${kind} ${at}: null in a file`);
        if (!file.ok) assert.equal(file.errors[0]?.field, at);
      }
    }
  });
}

test('a null the upstream schema does not allow stays an error for a served object', () => {
  const slice = { ...SERVED_OBJECTS.EndpointSlice, addressType: null };
  assert.deepEqual(errorsOf(validateObject(slice, undefined, SERVED_BY_API_SERVER)), [
    'EndpointSlice portico-gateway-system/proxy-edge-eg-1234abcd-x7k2p: addressType: must be one of IPv4, IPv6, FQDN',
  ]);
  const gateway = structuredClone(SERVED_OBJECTS.Gateway) as { spec: Json };
  gateway.spec.listeners = null;
  assert.deepEqual(errorsOf(validateObject(gateway, undefined, SERVED_BY_API_SERVER)), [
    'Gateway edge/eg: spec.listeners: must be a list',
  ]);
});

test('files stay strict: an EndpointSlice with null endpoints and a misspelled field are both errors', () => {
  const loaded = parseYamlFile(
    'slice.yaml',
    `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: s, namespace: apps, labels: {kubernetes.io/service-name: s}}
addressType: IPv4
endpoints: null
port: []
`,
  );
  assert.deepEqual(loaded.errors.map(formatResourceError), [
    "slice.yaml:6: EndpointSlice apps/s: port: unknown field (did you mean 'ports'?)",
    'slice.yaml:5: EndpointSlice apps/s: endpoints: must be a list',
  ]);
});

test('kubectl create --dry-run=client -o yaml output loads as a file', () => {
  const loaded = parseYamlFile(
    'svc.yaml',
    `apiVersion: v1
kind: Service
metadata:
  creationTimestamp: null
  labels:
    app: web
  name: web
spec:
  ports:
  - name: "80"
    port: 80
    protocol: TCP
    targetPort: 8080
  selector:
    app: web
  type: ClusterIP
status:
  loadBalancer: {}
`,
  );
  assert.deepEqual(loaded.errors, []);
  assert.equal(loaded.objects[0]?.object.metadata.creationTimestamp, undefined);
});

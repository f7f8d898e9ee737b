// docs/configuration.md, generated from the schemas Portico validates with (src/api), the DataPlaneProxy CRD's
// descriptions and the proxy's built-in limits (src/proxy/options.ts), so the reference cannot drift from what
// is checked (test/api/config-reference.test.ts fails when the committed page is not what this writes).
//
//   node --import tsx scripts/config-reference.ts        # rewrite docs/configuration.md
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Kind, type TSchema } from '@sinclair/typebox';
import ts from 'typescript';
import { parse } from 'yaml';
import { ObjectMetaSchema } from '../src/api/common.js';
import { PorticoGatewayConfigSchema } from '../src/api/controller-config.js';
import { type ApiKind, KINDS } from '../src/api/kinds.js';
import { DEFAULT_PROXY_OPTIONS } from '../src/proxy/options.js';

export const CONFIG_REFERENCE = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));
const CRD = fileURLToPath(
  new URL('../charts/gateway-helm/crds/gateway.portico.io_dataplaneproxies.yaml', import.meta.url),
);
const PROXY_OPTIONS = fileURLToPath(new URL('../src/proxy/options.ts', import.meta.url));

type Json = Record<string, unknown>;

interface Row {
  field: string;
  type: string;
  default: string;
  description: string;
}

/** What a field with no schema of its own (`Type.Unknown`) means where it sits. */
type UnknownNote = (path: string) => string;

interface Walk {
  describe: (path: string) => string | undefined;
  unknown: UnknownNote;
}

function isSchema(value: unknown): value is TSchema {
  return typeof value === 'object' && value !== null && Kind in value;
}

/** A markdown table cell: one line, pipes escaped. */
function cell(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replaceAll('|', '\\|');
}

function bounds(min: unknown, max: unknown, unit: string): string {
  if (min === undefined && max === undefined) return '';
  if (min !== undefined && max !== undefined) return `, ${min}–${max}${unit}`;
  return min !== undefined ? `, ≥ ${min}${unit}` : `, ≤ ${max}${unit}`;
}

/** A scalar's type with its constraints, e.g. `integer, 1–1024`, `` `A` \| `B` ``. */
function typeText(schema: TSchema): string {
  const anyOf = schema.anyOf as TSchema[] | undefined;
  if (anyOf !== undefined) {
    if (anyOf.every((a) => a.const !== undefined))
      return anyOf.map((a) => `\`${String(a.const)}\``).join(' | ');
    return anyOf.map(typeText).join(' or ');
  }
  if (schema.const !== undefined) return `\`${String(schema.const)}\``;
  switch (schema.type) {
    case 'string':
      return `${schema.minLength === 1 && schema.maxLength === undefined ? 'non-empty string' : `string${bounds(schema.minLength, schema.maxLength, ' chars')}`}${
        schema.pattern === undefined ? '' : `, matching \`${String(schema.pattern)}\``
      }`;
    case 'integer':
    case 'number':
      return `${String(schema.type)}${bounds(schema.minimum, schema.maximum, '')}`;
    case 'boolean':
      return 'boolean';
    case 'array':
      return `list of ${isSchema(schema.items) ? typeText(schema.items) : 'any'}${bounds(schema.minItems, schema.maxItems, ' items')}`;
    case 'object':
      return schema.patternProperties === undefined
        ? 'object'
        : `map of string to ${typeText(mapValue(schema)!)}`;
    default:
      return 'any';
  }
}

function mapValue(schema: TSchema): TSchema | undefined {
  const values = Object.values((schema.patternProperties ?? {}) as Record<string, unknown>);
  return isSchema(values[0]) ? values[0] : undefined;
}

function defaultText(schema: TSchema): string {
  if (schema.default === undefined) return '';
  const value: unknown = schema.default;
  if (typeof value === 'object' && value !== null && Object.keys(value).length === 0 && !Array.isArray(value))
    return '';
  return `\`${JSON.stringify(value)}\``;
}

/** One row per field below `path`, depth first; lists go on as `path[]`, maps as `path.<key>`. */
function rows(schema: TSchema, path: string, required: boolean, walk: Walk): Row[] {
  const own: Row = {
    field: `\`${path}\``,
    // A field with a default may be left out, whatever the schema's `required` says.
    type: `${typeText(schema)}${required && schema.default === undefined ? ' (required)' : ''}`,
    default: defaultText(schema),
    description:
      (typeof schema.description === 'string' ? schema.description : undefined) ??
      walk.describe(path) ??
      (schema[Kind] === 'Unknown' ? walk.unknown(path) : ''),
  };
  return [own, ...children(schema, path, walk)];
}

function children(schema: TSchema, path: string, walk: Walk): Row[] {
  if (schema.type === 'array' && isSchema(schema.items)) {
    return childrenOfObject(schema.items, `${path}[]`, walk);
  }
  if (schema.type === 'object' && schema.patternProperties !== undefined) {
    const value = mapValue(schema);
    return value === undefined ? [] : childrenOfObject(value, `${path}.<key>`, walk);
  }
  return childrenOfObject(schema, path, walk);
}

function childrenOfObject(schema: TSchema, path: string, walk: Walk): Row[] {
  if (schema.type !== 'object' || schema.properties === undefined) return [];
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(schema.properties as Record<string, TSchema>).flatMap(([name, field]) =>
    rows(field, path === '' ? name : `${path}.${name}`, required.has(name), walk),
  );
}

function table(list: Row[]): string {
  const lines = ['| field | type | default | what it does |', '|---|---|---|---|'];
  for (const r of list)
    lines.push(`| ${cell(r.field)} | ${cell(r.type)} | ${cell(r.default)} | ${cell(r.description)} |`);
  return lines.join('\n');
}

/** The DataPlaneProxy CRD's description of a field, found by the same path. */
function crdDescriber(): (path: string) => string | undefined {
  const crd = parse(readFileSync(CRD, 'utf8')) as {
    spec: { versions: { schema: { openAPIV3Schema: Json } }[] };
  };
  const root = crd.spec.versions[0]!.schema.openAPIV3Schema;
  return (path) => {
    let node: Json | undefined = root;
    for (const part of path.split('.')) {
      const name = part.replace(/\[\]$/, '');
      node =
        name === '<key>'
          ? (node?.additionalProperties as Json)
          : ((node?.properties as Json)?.[name] as Json);
      if (part.endsWith('[]')) node = node?.items as Json;
    }
    if (path.endsWith('[]')) return undefined;
    return typeof node?.description === 'string' ? node.description : undefined;
  };
}

const NO_DESCRIPTION = () => undefined;

/** A kind's fields but metadata and status (shared, and written by controllers). */
function kindRows(kind: ApiKind, walk: Walk): Row[] {
  const schema = KINDS[kind].schema;
  const apiVersions = KINDS[kind].apiVersions.map((v) => `\`${v}\``).join(', ');
  const fields = Object.entries(schema.properties as Record<string, TSchema>).filter(
    ([name]) => name !== 'metadata' && name !== 'status' && name !== 'apiVersion',
  );
  const required = new Set((schema.required ?? []) as string[]);
  return [
    { field: '`apiVersion`', type: `${apiVersions} (required)`, default: '', description: '' },
    ...fields.flatMap(([name, field]) => rows(field, name, required.has(name), walk)),
  ];
}

interface Limit {
  name: string;
  doc: string;
}

/** The fields of `interfaceName` in src/proxy/options.ts with their doc comments, in source order. */
function documentedFields(interfaceName: string): Limit[] {
  const source = ts.createSourceFile(
    PROXY_OPTIONS,
    readFileSync(PROXY_OPTIONS, 'utf8'),
    ts.ScriptTarget.ES2022,
    true,
  );
  const found = source.statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === interfaceName,
  );
  if (found === undefined) throw new Error(`${PROXY_OPTIONS}: no interface ${interfaceName}`);
  return found.members.filter(ts.isPropertySignature).map((m) => ({
    name: m.name.getText(source),
    doc: ts
      .getJSDocCommentsAndTags(m)
      .map((d) => (ts.isJSDoc(d) ? (ts.getTextOfJSDocComment(d.comment) ?? '') : ''))
      .join(' '),
  }));
}

function limitsTable(prefix: string, interfaceName: string, defaults: Record<string, unknown>): string {
  const list = documentedFields(interfaceName).map((f) => ({
    field: `\`${prefix}.${f.name}\``,
    type: typeof defaults[f.name],
    default: `\`${String(defaults[f.name])}\``,
    description: f.doc,
  }));
  return table(list);
}

const INTRO = `# Configuration reference

[← README](../README.md) · every field Portico reads, with its type, limits and default. Generated from the
schemas Portico validates with (\`src/api\`), the DataPlaneProxy CRD's descriptions and the proxy's built-in
limits by \`node --import tsx scripts/config-reference.ts\`; \`test/api/config-reference.test.ts\` fails when
this page is not what that command writes. A field written \`a[]\` is one element of list \`a\`, \`a.<key>\` one
value of map \`a\`. A misspelled field is an error naming it (and the field it resembles), never ignored.

- [PorticoGateway](#porticogateway): the controller configuration file (\`--config\`)
- [DataPlaneProxy](#dataplaneproxy): parameters of a GatewayClass's (or one Gateway's) proxy fleets
- [Gateway API and core kinds](#gateway-api-and-core-kinds): the fields Portico reads of them, and those it admits and ignores
- [Proxy limits](#proxy-limits): the bounds built into every proxy
`;

export function renderConfigReference(): string {
  const gatewayApi: string[] = [];
  const ignored: UnknownNote = () => 'Not implemented: admitted, as the API server would, and ignored.';
  // Every kind the API layer loads, in its table's order: a kind added there gets its section here.
  const kinds = (Object.keys(KINDS) as ApiKind[]).filter((k) => k !== 'DataPlaneProxy');
  for (const kind of kinds) {
    gatewayApi.push(
      `### ${kind}\n\n${table(kindRows(kind, { describe: NO_DESCRIPTION, unknown: ignored }))}\n`,
    );
  }
  const controller = rows(PorticoGatewayConfigSchema, '', false, {
    describe: NO_DESCRIPTION,
    unknown: ignored,
  }).slice(1);
  const dataPlaneProxy = kindRows('DataPlaneProxy', {
    describe: crdDescriber(),
    unknown: () => "Kubernetes' own shape of this field, passed on without a check of Portico's.",
  });
  return [
    INTRO,
    '## PorticoGateway',
    '',
    'One YAML document, given with `--config` (`portico standalone`, `portico controller`; on a cluster the chart',
    'mounts it from a ConfigMap). Every field may be left out: an absent one takes its default. The standalone',
    'controller reads `provider.standalone` only; the Kubernetes one `provider.kubernetes`.',
    '',
    table(controller),
    '',
    '## DataPlaneProxy',
    '',
    'Namespaced. A GatewayClass names one in `spec.parametersRef` (group `gateway.portico.io`, kind `DataPlaneProxy`);',
    "a Gateway may name one of its own namespace in `spec.infrastructure.parametersRef`, laid over its class's",
    'field by field. Standalone mode reads `mergeGateways`, `workers`, `drainSeconds`, `logLevel` and `telemetry`;',
    '`kubernetes` shapes the objects on a cluster.',
    '',
    table(dataPlaneProxy),
    '',
    '## Gateway API and core kinds',
    '',
    'Portico validates these as the API server does with the upstream CRDs ([Gateway API reference](https://gateway-api.sigs.k8s.io/reference/spec/)',
    'for what each field means). The tables list every field Portico reads, with the limits it checks; a field',
    'marked *not implemented* is admitted and ignored. `metadata` is the standard object metadata below, and',
    '`status` is written by controllers and never read.',
    '',
    '### metadata',
    '',
    table(rows(ObjectMetaSchema, 'metadata', true, { describe: NO_DESCRIPTION, unknown: ignored })),
    '',
    ...gatewayApi,
    '## Proxy limits',
    '',
    'Built into every proxy (`src/proxy/options.ts`), the same in standalone mode and on a cluster; neither a',
    'DataPlaneProxy nor a flag changes them in this version. Times are in milliseconds, sizes in bytes unless the',
    'name says otherwise; the limits apply per worker process.',
    '',
    limitsTable('limits', 'ProxyLimits', DEFAULT_PROXY_OPTIONS.limits as unknown as Record<string, unknown>),
    '',
    limitsTable('http2', 'Http2Limits', DEFAULT_PROXY_OPTIONS.http2 as unknown as Record<string, unknown>),
    '',
    limitsTable('layer4', 'Layer4Limits', DEFAULT_PROXY_OPTIONS.layer4 as unknown as Record<string, unknown>),
    '',
  ].join('\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(CONFIG_REFERENCE, renderConfigReference());
}

// `portico get`: kubectl-style listing of the running standalone controller's resources, via its admin API.
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { formatResourceError, type ResourceError } from '../api/common.js';
import { PorticoError } from '../platform/errors.js';
import { DEFAULT_ADMIN_ADDRESS } from '../provider/standalone/admin-server.js';
import type { ResourceObject } from '../provider/standalone/admin-state.js';
import { getConfig } from './get-config.js';
import { JsonPathError, type JsonPathTemplate, parseJsonPath } from './jsonpath.js';
import { ageSince, formatTable } from './output.js';
import {
  type ChangeFeed,
  kubernetesSource,
  type ResourceSource,
  resourceKind,
  STANDALONE_POLL_MS,
  standaloneSource,
} from './resource-source.js';
import { usageError } from './usage.js';

export const HELP = `usage: portico get gatewayclasses|gateways|listenersets|httproutes|grpcroutes|accesspolicies [NAME] [options]
       portico get config [FLEET] [-o yaml|json] [--admin-address A | --proxy-admin A]

Lists the resources of the standalone controller running on this machine (or, with --kubeconfig, of a
cluster), with their status. Kinds take kubectl's names too: gc, gtw, lset, gateway, httproute, and plural.group.
Errors in the standalone resource files are listed after them, on stderr (the objects of a broken file keep
their last good content).

options:
  -n, --namespace NS       namespace to list (default: default; ignored for gatewayclasses)
  -A, --all-namespaces     list every namespace (adds a NAMESPACE column)
  -o, --output FORMAT      wide, name, json, yaml or jsonpath=TEMPLATE (default: a table); a JSONPath
                           template as kubectl takes it, on the List (or the one object NAME names):
                           -o jsonpath='{range .items[*]}{.metadata.name}{"\\n"}{end}'
  -w, --watch              after the list, print each object again whenever it changes (or goes), until
                           interrupted (a cluster's watch stream; the standalone API is read every ${STANDALONE_POLL_MS} ms)
      --admin-address A    the controller's admin API (default: ${DEFAULT_ADMIN_ADDRESS})
      --kubeconfig FILE    read a Kubernetes cluster instead (the kubeconfig's current context)
      --proxy-admin A      get config: one proxy's own config dump (its --admin-address, port 19000)

get config prints each fleet's configuration as its proxies are served it (listeners, virtual hosts, routes,
clusters, endpoints; private keys redacted), or with --proxy-admin what that proxy has applied.
  -h, --help               this text`;

interface Column {
  header: string;
  cell: (resource: ResourceObject, now: number) => string;
  /** Shown only with `-o wide` (kubectl's priority-1 printer columns). */
  wide?: boolean;
}

interface ResourceType {
  kind: string;
  plural: string;
  namespaced: boolean;
  columns: Column[];
}

const AGE: Column = { header: 'AGE', cell: (r, now) => ageSince(r.metadata.creationTimestamp, now) };

/** Every Portico policy kind's: its ancestors' Accepted and its targets. */
const POLICY_COLUMNS: Column[] = [
  { header: 'ACCEPTED', cell: (r) => ancestorsCondition(r, 'Accepted') },
  AGE,
  {
    header: 'TARGETS',
    cell: (r) =>
      list(field(r.spec, 'targetRefs'))
        .map((t) => {
          const section = text(field(t, 'sectionName'));
          return `${text(field(t, 'kind'))}/${text(field(t, 'name'))}${section === '' ? '' : `#${section}`}`;
        })
        .join(','),
    wide: true,
  },
];

// A route's condition over every parent that reports one: True when all say True, False when one does not,
// <none> when no parent reports (a route attached nowhere says so instead of showing an empty cell).
const ROUTE_COLUMNS: Column[] = [
  { header: 'HOSTNAMES', cell: (r) => jsonCell(field(r.spec, 'hostnames')) },
  { header: 'ACCEPTED', cell: (r) => parentsCondition(r, 'Accepted') },
  { header: 'RESOLVED', cell: (r) => parentsCondition(r, 'ResolvedRefs') },
  AGE,
  { header: 'PARENTS', cell: (r) => parentNames(r), wide: true },
];

// The columns are the additionalPrinterColumns of the Gateway API CRDs (and, for routes, their status as the
// Gateway API's own kubectl plugin shows it), so output reads as `kubectl get` does.
const TYPES: ResourceType[] = [
  {
    kind: 'GatewayClass',
    plural: 'gatewayclasses',
    namespaced: false,
    columns: [
      { header: 'CONTROLLER', cell: (r) => text(field(r.spec, 'controllerName')) },
      { header: 'ACCEPTED', cell: (r) => conditionStatus(r, 'Accepted') },
      AGE,
      { header: 'DESCRIPTION', cell: (r) => text(field(r.spec, 'description')), wide: true },
    ],
  },
  {
    kind: 'Gateway',
    plural: 'gateways',
    namespaced: true,
    columns: [
      { header: 'CLASS', cell: (r) => text(field(r.spec, 'gatewayClassName')) },
      { header: 'ADDRESS', cell: (r) => firstAddress(r) },
      { header: 'PROGRAMMED', cell: (r) => conditionStatus(r, 'Programmed') },
      AGE,
      { header: 'ACCEPTED', cell: (r) => conditionStatus(r, 'Accepted'), wide: true },
      { header: 'LISTENERS', cell: (r) => String(list(field(r.status, 'listeners')).length), wide: true },
      { header: 'ATTACHED ROUTES', cell: (r) => String(attachedRoutes(r)), wide: true },
    ],
  },
  {
    kind: 'ListenerSet',
    plural: 'listenersets',
    namespaced: true,
    columns: [
      { header: 'ACCEPTED', cell: (r) => conditionStatus(r, 'Accepted') },
      { header: 'PROGRAMMED', cell: (r) => conditionStatus(r, 'Programmed') },
      AGE,
      {
        header: 'GATEWAY',
        cell: (r) => {
          const ref = field(r.spec, 'parentRef');
          return `${text(field(ref, 'namespace')) || (r.metadata.namespace ?? '')}/${text(field(ref, 'name'))}`;
        },
        wide: true,
      },
      { header: 'LISTENERS', cell: (r) => String(list(field(r.status, 'listeners')).length), wide: true },
      { header: 'ATTACHED ROUTES', cell: (r) => String(attachedRoutes(r)), wide: true },
    ],
  },
  { kind: 'HTTPRoute', plural: 'httproutes', namespaced: true, columns: ROUTE_COLUMNS },
  { kind: 'GRPCRoute', plural: 'grpcroutes', namespaced: true, columns: ROUTE_COLUMNS },
  { kind: 'TLSRoute', plural: 'tlsroutes', namespaced: true, columns: ROUTE_COLUMNS },
  { kind: 'TCPRoute', plural: 'tcproutes', namespaced: true, columns: ROUTE_COLUMNS },
  { kind: 'UDPRoute', plural: 'udproutes', namespaced: true, columns: ROUTE_COLUMNS },
  { kind: 'AccessPolicy', plural: 'accesspolicies', namespaced: true, columns: POLICY_COLUMNS },
  { kind: 'ClientTrafficPolicy', plural: 'clienttrafficpolicies', namespaced: true, columns: POLICY_COLUMNS },
  { kind: 'RateLimitPolicy', plural: 'ratelimitpolicies', namespaced: true, columns: POLICY_COLUMNS },
];

export interface GetIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  now: () => number;
  /** Ends a watch (-w); the process's SIGINT and SIGTERM do for the command line. */
  stop?: AbortSignal;
}

export function run(argv: string[]): Promise<number> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return runGet(argv, {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    now: Date.now,
    stop: stop.signal,
  }).finally(() => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  });
}

/** What a watch compares: an object's content without what changes on its own (none yet; kept explicit). */
function watchIdentity(r: ResourceObject): string {
  return JSON.stringify({ metadata: r.metadata, spec: r.spec, status: r.status });
}

function objectKey(r: ResourceObject): string {
  return `${r.metadata.namespace ?? ''}/${r.metadata.name}`;
}

/**
 * `-w`: reads the source every WATCH_INTERVAL_MS and prints each object that changed, appeared or went — a
 * table row without the header (as kubectl does), a name, or the object as JSON or YAML — until stopped.
 */
async function watch(
  type: ResourceType,
  initial: ResourceObject[],
  read: () => Promise<ResourceObject[]>,
  feed: ChangeFeed,
  request: { output?: string; jsonPath?: JsonPathTemplate; allNamespaces: boolean },
  io: GetIo,
): Promise<number> {
  const seen = new Map(initial.map((r) => [objectKey(r), watchIdentity(r)]));
  const lastObjects = new Map(initial.map((r) => [objectKey(r), r]));
  const print = (changed: ResourceObject[]) => {
    if (changed.length === 0) return;
    if (request.jsonPath !== undefined) {
      for (const r of changed) io.stdout(request.jsonPath.run(r));
    } else if (request.output === 'name') {
      for (const r of changed)
        io.stdout(`${type.kind.toLowerCase()}.gateway.networking.k8s.io/${r.metadata.name}\n`);
    } else if (request.output === 'json') {
      for (const r of changed) io.stdout(`${JSON.stringify(r, null, 4)}\n`);
    } else if (request.output === 'yaml') {
      for (const r of changed) io.stdout(`---\n${stringify(r)}`);
    } else {
      const rows = table(type, changed, request.allNamespaces, request.output === 'wide', io.now());
      io.stdout(rows.slice(rows.indexOf('\n') + 1));
    }
  };
  while (!(io.stop?.aborted ?? false)) {
    await feed.next();
    if (io.stop?.aborted ?? false) break;
    const now = await read();
    const changed = now.filter((r) => seen.get(objectKey(r)) !== watchIdentity(r));
    const current = new Set(now.map(objectKey));
    const gone = [...lastObjects.values()].filter((r) => !current.has(objectKey(r)));
    for (const r of gone) {
      seen.delete(objectKey(r));
      lastObjects.delete(objectKey(r));
    }
    for (const r of changed) {
      seen.set(objectKey(r), watchIdentity(r));
      lastObjects.set(objectKey(r), r);
    }
    print([...changed, ...gone]);
  }
  return 0;
}

export async function runGet(argv: string[], io: GetIo): Promise<number> {
  const { values, positionals } = parseOptions(argv);
  if (values.help === true) {
    io.stdout(`${HELP}\n`);
    return 0;
  }
  const [typeName, name, ...extra] = positionals;
  if (typeName === 'config' && extra.length === 0) {
    io.stdout(
      await getConfig({
        ...(name === undefined ? {} : { fleet: name }),
        ...(values.output === undefined ? {} : { output: values.output }),
        adminAddress: values['admin-address'] ?? DEFAULT_ADMIN_ADDRESS,
        ...(values['proxy-admin'] === undefined ? {} : { proxyAdmin: values['proxy-admin'] }),
      }),
    );
    return 0;
  }
  const type = TYPES.find((t) => t.plural === resourceKind(typeName)?.plural);
  if (type === undefined || extra.length > 0) {
    const what =
      typeName === undefined ? 'a resource type is required' : `unknown resource type '${typeName}'`;
    throw new PorticoError('E_USAGE', `get: ${what}\n\n${HELP}`);
  }
  const output = values.output;
  const jsonPath = jsonPathOf(output);
  if (output !== undefined && jsonPath === undefined && !['wide', 'name', 'json', 'yaml'].includes(output)) {
    throw new PorticoError(
      'E_USAGE',
      `get: --output must be wide, name, json, yaml or jsonpath=TEMPLATE, not '${output}'`,
    );
  }
  const allNamespaces = type.namespaced && values['all-namespaces'] === true && name === undefined;
  const namespace = type.namespaced && !allNamespaces ? (values.namespace ?? 'default') : undefined;
  const source = await sourceOf(values);
  const kind = resourceKind(type.plural)!;
  const items = await source.list(kind, namespace, name);
  // Said last, on stderr: what is shown may be the last good content of a file that is broken now.
  const code = show(type, items, { name, namespace, output, jsonPath, allNamespaces }, io);
  reportLoadErrors(await source.loadErrors(), io);
  if (values.watch !== true) return code;
  const feed = source.changes(kind, namespace, io.stop);
  const request = { output, allNamespaces, ...(jsonPath === undefined ? {} : { jsonPath }) };
  return watch(type, items, () => source.list(kind, namespace, name), feed, request, io);
}

/** The template of `-o jsonpath=TEMPLATE` (kubectl's spelling), parsed; undefined for other formats. */
function jsonPathOf(output: string | undefined): JsonPathTemplate | undefined {
  if (output === undefined || !/^jsonpath(=|$)/.test(output)) return undefined;
  const template = output.slice('jsonpath='.length);
  if (template === '')
    throw new PorticoError(
      'E_USAGE',
      `get: -o jsonpath needs a template, e.g. -o jsonpath='{.items[*].metadata.name}'`,
    );
  try {
    return parseJsonPath(template);
  } catch (error) {
    if (!(error instanceof JsonPathError)) throw error;
    const pointer = `  ${template}\n  ${' '.repeat(error.column - 1)}^`;
    throw new PorticoError('E_USAGE', `get: -o jsonpath: ${error.message}\n${pointer}`, { cause: error });
  }
}

function show(
  type: ResourceType,
  items: ResourceObject[],
  request: {
    name?: string;
    namespace?: string;
    output?: string;
    jsonPath?: JsonPathTemplate | undefined;
    allNamespaces: boolean;
  },
  io: GetIo,
): number {
  const { name, namespace, output, allNamespaces } = request;
  if (request.jsonPath !== undefined) return showJsonPath(type, items, request, request.jsonPath, io);
  if (output === 'name') {
    if (name !== undefined && items[0] === undefined) {
      const where = namespace === undefined ? '' : ` in namespace ${namespace}`;
      throw new PorticoError('E_VALIDATION', `${type.plural} "${name}" not found${where}`);
    }
    // kubectl's `-o name`: kind.group/name, one a line, for scripts.
    for (const r of items)
      io.stdout(`${type.kind.toLowerCase()}.gateway.networking.k8s.io/${r.metadata.name}\n`);
    return 0;
  }
  if (name !== undefined) {
    const found = items[0];
    if (found === undefined) {
      const where = namespace === undefined ? '' : ` in namespace ${namespace}`;
      throw new PorticoError('E_VALIDATION', `${type.plural} "${name}" not found${where}`);
    }
    if (output === 'json') io.stdout(`${JSON.stringify(found, null, 4)}\n`);
    else if (output === 'yaml') io.stdout(stringify(found));
    else io.stdout(table(type, [found], false, output === 'wide', io.now()));
    return 0;
  }
  if (output === 'json' || output === 'yaml') {
    const list = { apiVersion: 'v1', items, kind: 'List', metadata: { resourceVersion: '' } };
    io.stdout(output === 'json' ? `${JSON.stringify(list, null, 4)}\n` : stringify(list));
    return 0;
  }
  if (items.length === 0) {
    io.stderr(
      namespace === undefined ? 'No resources found\n' : `No resources found in ${namespace} namespace.\n`,
    );
    return 0;
  }
  io.stdout(table(type, items, allNamespaces, output === 'wide', io.now()));
  return 0;
}

/** kubectl's jsonpath output: the template on the List, or on the one object a name asks for; no newline added. */
function showJsonPath(
  type: ResourceType,
  items: ResourceObject[],
  request: { name?: string; namespace?: string },
  template: JsonPathTemplate,
  io: GetIo,
): number {
  if (request.name !== undefined) {
    const found = items[0];
    if (found === undefined) {
      const where = request.namespace === undefined ? '' : ` in namespace ${request.namespace}`;
      throw new PorticoError('E_VALIDATION', `${type.plural} "${request.name}" not found${where}`);
    }
    io.stdout(template.run(found));
    return 0;
  }
  io.stdout(template.run({ apiVersion: 'v1', items, kind: 'List', metadata: { resourceVersion: '' } }));
  return 0;
}

function reportLoadErrors(errors: ResourceError[], io: GetIo): void {
  if (errors.length === 0) return;
  const count = `${errors.length} resource file error${errors.length === 1 ? '' : 's'}`;
  io.stderr(`warning: ${count}; objects of a broken file keep serving their last good content:\n`);
  for (const e of errors) io.stderr(`  ${formatResourceError(e)}\n`);
}

/** The cluster of --kubeconfig, else the standalone controller of --admin-address. */
export async function sourceOf(values: {
  kubeconfig?: string;
  'admin-address'?: string;
}): Promise<ResourceSource> {
  if (values.kubeconfig !== undefined) {
    if (values['admin-address'] !== undefined)
      throw new PorticoError('E_USAGE', '--kubeconfig and --admin-address name two sources: give one');
    return kubernetesSource(values.kubeconfig);
  }
  return standaloneSource(values['admin-address'] ?? DEFAULT_ADMIN_ADDRESS);
}

function parseOptions(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        namespace: { type: 'string', short: 'n' },
        'all-namespaces': { type: 'boolean', short: 'A' },
        output: { type: 'string', short: 'o' },
        'admin-address': { type: 'string' },
        kubeconfig: { type: 'string' },
        'proxy-admin': { type: 'string' },
        watch: { type: 'boolean', short: 'w' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw usageError('get', HELP, error);
  }
}

function table(
  type: ResourceType,
  items: ResourceObject[],
  withNamespace: boolean,
  wide: boolean,
  now: number,
) {
  const columns = type.columns.filter((c) => wide || c.wide !== true);
  const header = [...(withNamespace ? ['NAMESPACE'] : []), 'NAME', ...columns.map((c) => c.header)];
  const rows = items.map((r) => [
    ...(withNamespace ? [r.metadata.namespace ?? ''] : []),
    r.metadata.name,
    ...columns.map((c) => c.cell(r, now)),
  ]);
  return formatTable(header, rows);
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

function text(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : '';
}

/** kubectl prints a list-valued string column as JSON, e.g. `["a.example.com","b.example.com"]`. */
function jsonCell(value: unknown): string {
  return value === undefined || value === null
    ? ''
    : typeof value === 'string'
      ? value
      : JSON.stringify(value);
}

function conditionStatus(resource: ResourceObject, type: string): string {
  const conditions = field(resource.status, 'conditions');
  if (!Array.isArray(conditions)) return '';
  return text(
    field(
      conditions.find((c) => field(c, 'type') === type),
      'status',
    ),
  );
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function parentsCondition(route: ResourceObject, type: string): string {
  const statuses = list(field(route.status, 'parents')).map((p) =>
    text(
      field(
        list(field(p, 'conditions')).find((c) => field(c, 'type') === type),
        'status',
      ),
    ),
  );
  if (statuses.length === 0) return '<none>';
  return statuses.every((s) => s === 'True') ? 'True' : statuses.includes('False') ? 'False' : 'Unknown';
}

/** A policy's condition over its ancestors, as parentsCondition over a route's parents. */
function ancestorsCondition(policy: ResourceObject, type: string): string {
  return parentsCondition({ ...policy, status: { parents: list(field(policy.status, 'ancestors')) } }, type);
}

/** The Gateways (and their sections) a route names, as namespace/name[/section] when not its own namespace. */
function parentNames(route: ResourceObject): string {
  const names = list(field(route.spec, 'parentRefs')).map((ref) => {
    const ns = text(field(ref, 'namespace'));
    const section = text(field(ref, 'sectionName'));
    const own = ns === '' || ns === route.metadata.namespace;
    return `${own ? '' : `${ns}/`}${text(field(ref, 'name'))}${section === '' ? '' : `/${section}`}`;
  });
  return names.length === 0 ? '<none>' : names.join(',');
}

function attachedRoutes(gateway: ResourceObject): number {
  return list(field(gateway.status, 'listeners')).reduce<number>((n, l) => {
    const attached = field(l, 'attachedRoutes');
    return n + (typeof attached === 'number' ? attached : 0);
  }, 0);
}

/** kubectl's `.status.addresses[*].value` column shows the first address only. */
function firstAddress(resource: ResourceObject): string {
  const addresses = field(resource.status, 'addresses');
  return Array.isArray(addresses) ? text(field(addresses[0], 'value')) : '';
}

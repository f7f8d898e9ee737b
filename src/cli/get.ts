// `portico get`: kubectl-style listing of the running standalone controller's resources, via its admin API.
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { formatResourceError, type ResourceError } from '../api/common.js';
import { PorticoError } from '../platform/errors.js';
import { parseHostPort } from '../platform/host-port.js';
import { DEFAULT_ADMIN_ADDRESS } from '../provider/standalone/admin-server.js';
import type { ResourceObject } from '../provider/standalone/admin-state.js';
import { ageSince, formatTable } from './output.js';
import { usageError } from './usage.js';

export const HELP = `usage: portico get gatewayclasses|gateways|httproutes|grpcroutes [NAME] [options]

Lists the resources of the standalone controller running on this machine, with their status. Errors in its
resource files are listed after them, on stderr (the objects of a broken file keep their last good content).

options:
  -n, --namespace NS       namespace to list (default: default; ignored for gatewayclasses)
  -A, --all-namespaces     list every namespace (adds a NAMESPACE column)
  -o, --output FORMAT      wide, name, json or yaml (default: a table)
      --admin-address A    the controller's admin API (default: ${DEFAULT_ADMIN_ADDRESS})
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
  { kind: 'HTTPRoute', plural: 'httproutes', namespaced: true, columns: ROUTE_COLUMNS },
  { kind: 'GRPCRoute', plural: 'grpcroutes', namespaced: true, columns: ROUTE_COLUMNS },
];

const ALIASES: Record<string, string> = {
  gatewayclass: 'gatewayclasses',
  gatewayclasses: 'gatewayclasses',
  gc: 'gatewayclasses',
  gateway: 'gateways',
  gateways: 'gateways',
  gtw: 'gateways',
  httproute: 'httproutes',
  httproutes: 'httproutes',
  grpcroute: 'grpcroutes',
  grpcroutes: 'grpcroutes',
};

export interface GetIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  now: () => number;
}

const PROCESS_IO: GetIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  now: Date.now,
};

export function run(argv: string[]): Promise<number> {
  return runGet(argv, PROCESS_IO);
}

export async function runGet(argv: string[], io: GetIo): Promise<number> {
  const { values, positionals } = parseOptions(argv);
  if (values.help === true) {
    io.stdout(`${HELP}\n`);
    return 0;
  }
  const [typeName, name, ...extra] = positionals;
  const type = TYPES.find((t) => t.plural === ALIASES[typeName?.toLowerCase() ?? '']);
  if (type === undefined || extra.length > 0) {
    const what =
      typeName === undefined ? 'a resource type is required' : `unknown resource type '${typeName}'`;
    throw new PorticoError('E_USAGE', `get: ${what}\n\n${HELP}`);
  }
  const output = values.output;
  if (output !== undefined && !['wide', 'name', 'json', 'yaml'].includes(output)) {
    throw new PorticoError('E_USAGE', `get: --output must be wide, name, json or yaml, not '${output}'`);
  }
  const allNamespaces = type.namespaced && values['all-namespaces'] === true && name === undefined;
  const namespace = type.namespaced && !allNamespaces ? (values.namespace ?? 'default') : undefined;
  const adminAddress = values['admin-address'] ?? DEFAULT_ADMIN_ADDRESS;
  parseHostPort(adminAddress, '--admin-address');

  const items = await fetchResources(adminAddress, type.kind, namespace, name);
  // Said last, on stderr: what is shown may be the last good content of a file that is broken now.
  const code = show(type, items, { name, namespace, output, allNamespaces }, io);
  reportLoadErrors(await fetchLoadErrors(adminAddress), io);
  return code;
}

function show(
  type: ResourceType,
  items: ResourceObject[],
  request: { name?: string; namespace?: string; output?: string; allNamespaces: boolean },
  io: GetIo,
): number {
  const { name, namespace, output, allNamespaces } = request;
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

function reportLoadErrors(errors: ResourceError[], io: GetIo): void {
  if (errors.length === 0) return;
  const count = `${errors.length} resource file error${errors.length === 1 ? '' : 's'}`;
  io.stderr(`warning: ${count}; objects of a broken file keep serving their last good content:\n`);
  for (const e of errors) io.stderr(`  ${formatResourceError(e)}\n`);
}

/** The controller's current load errors; none when it cannot tell (an older controller, say). */
async function fetchLoadErrors(adminAddress: string): Promise<ResourceError[]> {
  try {
    const response = await fetch(`http://${adminAddress}/api/errors`, {
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) return [];
    const parsed = (await response.json()) as { items?: unknown };
    return Array.isArray(parsed.items) ? (parsed.items as ResourceError[]) : [];
  } catch {
    return [];
  }
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

async function fetchResources(
  adminAddress: string,
  kind: string,
  namespace: string | undefined,
  name: string | undefined,
): Promise<ResourceObject[]> {
  const query = new URLSearchParams({ kind });
  if (namespace !== undefined) query.set('namespace', namespace);
  if (name !== undefined) query.set('name', name);
  const url = `http://${adminAddress}/api/resources?${query}`;
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    throw new PorticoError(
      'E_IO',
      `no standalone controller answers at ${adminAddress} (is 'portico standalone' running? ` +
        `otherwise pass its --admin-address)`,
      { cause: error },
    );
  }
  const body = await response.text();
  if (!response.ok) {
    throw new PorticoError(
      'E_IO',
      `the controller at ${adminAddress} answered ${response.status}: ${body.trim()}`,
    );
  }
  try {
    const parsed = JSON.parse(body) as { items?: unknown };
    if (Array.isArray(parsed.items)) return parsed.items as ResourceObject[];
  } catch {
    // Reported below, with the rest of the unexpected answers.
  }
  throw new PorticoError(
    'E_IO',
    `the controller at ${adminAddress} answered something other than a resource list`,
  );
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

// `portico describe` output, pure: one object with everything around it (its class, Gateways, routes, fleet)
// in, kubectl-describe-style text out. Every condition of every parent and listener with its reason and
// message, the routes attached to a Gateway, what a route is attached to (and, when nothing is, why), the
// fleet and its proxies, the file errors that concern the object, and its recent condition changes.
import { LOAD_ERRORS_ANNOTATION, type ResourceObject } from '../provider/standalone/admin-state.js';
import type { FleetView } from './fleet-view.js';
import { ageSince, formatTable } from './output.js';

/** Everything describe shows around the object. */
export interface DescribeContext {
  gatewayClasses: ResourceObject[];
  gateways: ResourceObject[];
  routes: ResourceObject[];
  fleets: FleetView[];
  /** Why the fleets could not be read (RBAC, say), when they could not. */
  fleetError?: string;
  now: number;
}

const RECENT_CHANGES = 10;
const LABEL_WIDTH = 14;

type Json = Record<string, unknown>;

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Json)[key] : undefined;
}

function text(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? String(value)
    : '';
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function indent(block: string, by: number): string {
  const pad = ' '.repeat(by);
  return block
    .split('\n')
    .map((line) => (line === '' ? line : `${pad}${line}`))
    .join('\n');
}

/** `Label:` lines with their values aligned, as kubectl describe prints them. */
function labelled(lines: [string, string][], by = 0): string {
  // One width for every block of a page (kubectl aligns each block; one width reads the same and diffs better).
  const width = Math.max(LABEL_WIDTH, ...lines.map(([label]) => label.length + 2));
  return indent(lines.map(([label, value]) => `${`${label}:`.padEnd(width)}${value}`).join('\n'), by);
}

function keyValues(map: unknown): string {
  const entries = Object.entries((map as Record<string, string> | undefined) ?? {}).filter(
    ([k]) => k !== LOAD_ERRORS_ANNOTATION && k !== 'kubectl.kubernetes.io/last-applied-configuration',
  );
  return entries.length === 0 ? '<none>' : entries.map(([k, v]) => `${k}=${v}`).join(', ');
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

function conditionsOf(value: unknown): Condition[] {
  return list(field(value, 'conditions')).map((c) => ({
    type: text(field(c, 'type')),
    status: text(field(c, 'status')),
    reason: text(field(c, 'reason')),
    message: text(field(c, 'message')),
    lastTransitionTime: text(field(c, 'lastTransitionTime')) || undefined,
    observedGeneration:
      typeof field(c, 'observedGeneration') === 'number'
        ? (field(c, 'observedGeneration') as number)
        : undefined,
  }));
}

/** A condition is a problem when it is not True, except Conflicted, which is one when True. */
function isProblem(c: Condition): boolean {
  return c.type === 'Conflicted' ? c.status === 'True' : c.status !== 'True';
}

function conditionTable(conditions: Condition[], now: number): string {
  if (conditions.length === 0) return '<none>\n';
  return formatTable(
    ['TYPE', 'STATUS', 'REASON', 'AGE', 'MESSAGE'],
    conditions.map((c) => [c.type, c.status, c.reason, ageSince(c.lastTransitionTime, now), c.message]),
  );
}

/** A condition with where it sits on the object (the object itself, a listener, a route's parent). */
interface PlacedCondition extends Condition {
  where: string;
}

function recentChanges(placed: PlacedCondition[], now: number): string {
  const dated = placed
    .filter((c) => c.lastTransitionTime !== undefined && !Number.isNaN(Date.parse(c.lastTransitionTime)))
    .sort((a, b) => Date.parse(b.lastTransitionTime ?? '') - Date.parse(a.lastTransitionTime ?? ''))
    .slice(0, RECENT_CHANGES);
  if (dated.length === 0) return 'Recent Condition Changes:  <none>\n';
  return `Recent Condition Changes:\n${indent(
    formatTable(
      ['AGE', 'WHERE', 'CONDITION', 'REASON', 'MESSAGE'],
      dated.map((c) => [
        ageSince(c.lastTransitionTime, now),
        c.where,
        `${c.type}=${c.status}`,
        c.reason,
        c.message,
      ]),
    ),
    2,
  )}`;
}

function problems(placed: PlacedCondition[]): string {
  const found = placed.filter(isProblem);
  if (found.length === 0) return 'Problems:  <none>\n';
  return `Problems:\n${found
    .map(
      (c) => `  ${c.where}: ${c.type}=${c.status} (${c.reason})${c.message === '' ? '' : `: ${c.message}`}`,
    )
    .join('\n')}\n`;
}

function loadErrors(resource: ResourceObject): string {
  const errors = resource.metadata.annotations?.[LOAD_ERRORS_ANNOTATION];
  if (errors === undefined || errors === '') return '';
  return `File Errors (the object keeps its last good content):\n${indent(errors.trim(), 2)}\n`;
}

function header(resource: ResourceObject, now: number): string {
  const created = resource.metadata.creationTimestamp;
  return `${labelled([
    ['Name', resource.metadata.name],
    ...(resource.metadata.namespace === undefined
      ? []
      : ([['Namespace', resource.metadata.namespace]] as [string, string][])),
    ['Kind', `${resource.kind} (${resource.apiVersion})`],
    ['Created', created === undefined ? '<unknown>' : `${created} (${ageSince(created, now)} ago)`],
    [
      'Generation',
      resource.metadata.generation === undefined ? '<unknown>' : String(resource.metadata.generation),
    ],
    ['Labels', keyValues(resource.metadata.labels)],
    ['Annotations', keyValues(resource.metadata.annotations)],
  ])}\n`;
}

/** The object described, in kubectl describe's layout. */
export function describeResource(resource: ResourceObject, context: DescribeContext): string {
  switch (resource.kind) {
    case 'GatewayClass':
      return describeGatewayClass(resource, context);
    case 'Gateway':
      return describeGateway(resource, context);
    case 'ListenerSet':
      return describeListenerSet(resource, context);
    case 'AccessPolicy':
    case 'ClientTrafficPolicy':
    case 'RateLimitPolicy':
      return describePolicy(resource, context);
    default:
      return describeRoute(resource, context);
  }
}

function describeGatewayClass(gc: ResourceObject, context: DescribeContext): string {
  const placed = conditionsOf(gc.status).map((c) => ({ ...c, where: 'GatewayClass' }));
  const parameters = field(gc.spec, 'parametersRef');
  const gateways = context.gateways.filter(
    (g) => text(field(g.spec, 'gatewayClassName')) === gc.metadata.name,
  );
  const gatewayTable =
    gateways.length === 0
      ? '  <none>\n'
      : indent(
          formatTable(
            ['NAMESPACE', 'NAME', 'ACCEPTED', 'PROGRAMMED'],
            gateways.map((g) => [
              g.metadata.namespace ?? '',
              g.metadata.name,
              statusOf(conditionsOf(g.status), 'Accepted'),
              statusOf(conditionsOf(g.status), 'Programmed'),
            ]),
          ),
          2,
        );
  return [
    header(gc, context.now),
    labelled([
      ['Controller', text(field(gc.spec, 'controllerName'))],
      ['Description', text(field(gc.spec, 'description')) || '<none>'],
      [
        'Parameters',
        parameters === undefined
          ? '<none>'
          : `${text(field(parameters, 'kind'))} ${[text(field(parameters, 'namespace')), text(field(parameters, 'name'))].filter((s) => s !== '').join('/')}`,
      ],
    ]),
    '\n',
    `Conditions:\n${indent(conditionTable(conditionsOf(gc.status), context.now), 2)}`,
    `Gateways:\n${gatewayTable}`,
    problems(placed),
    loadErrors(gc),
    recentChanges(placed, context.now),
  ].join('');
}

function describeListenerSet(ls: ResourceObject, context: DescribeContext): string {
  const parent = field(ls.spec, 'parentRef');
  const parentNs = text(field(parent, 'namespace')) || (ls.metadata.namespace ?? '');
  const placed: PlacedCondition[] = conditionsOf(ls.status).map((c) => ({ ...c, where: 'ListenerSet' }));
  const listeners = list(field(ls.status, 'listeners')).map((l) => {
    const name = text(field(l, 'name'));
    for (const c of conditionsOf(l)) placed.push({ ...c, where: `listener ${name}` });
    const conditions = conditionsOf(l);
    return [
      name,
      String(field(l, 'attachedRoutes') ?? 0),
      statusOf(conditions, 'Accepted'),
      statusOf(conditions, 'Programmed'),
      statusOf(conditions, 'ResolvedRefs'),
    ];
  });
  const listenerTable =
    listeners.length === 0
      ? '  <none>\n'
      : indent(formatTable(['NAME', 'ROUTES', 'ACCEPTED', 'PROGRAMMED', 'RESOLVED'], listeners), 2);
  return [
    header(ls, context.now),
    labelled([['Gateway', `${parentNs}/${text(field(parent, 'name'))}`]]),
    '\n',
    `Conditions:\n${indent(conditionTable(conditionsOf(ls.status), context.now), 2)}`,
    `Listeners:\n${listenerTable}`,
    problems(placed),
    loadErrors(ls),
    recentChanges(placed, context.now),
  ].join('');
}

/** A Portico policy: its targets and, per ancestor (the Gateways it reaches), its conditions. */
function describePolicy(policy: ResourceObject, context: DescribeContext): string {
  const placed: PlacedCondition[] = [];
  const targets = list(field(policy.spec, 'targetRefs')).map((t) => {
    const section = text(field(t, 'sectionName'));
    return `${text(field(t, 'kind'))} ${text(field(t, 'name'))}${section === '' ? '' : ` (${section})`}`;
  });
  const blocks = list(field(policy.status, 'ancestors')).map((a) => {
    const ref = field(a, 'ancestorRef');
    const section = text(field(ref, 'sectionName'));
    const where = `${text(field(ref, 'kind'))} ${text(field(ref, 'namespace'))}/${text(field(ref, 'name'))}${section === '' ? '' : ` (${section})`}`;
    const conditions = conditionsOf(a);
    placed.push(...conditions.map((c) => ({ ...c, where })));
    return `  ${where} (controller ${text(field(a, 'controllerName'))}):\n${indent(conditionTable(conditions, context.now), 4)}`;
  });
  return [
    header(policy, context.now),
    labelled([['Targets', targets.join(', ')]]),
    '\n',
    `Ancestors:\n${blocks.length === 0 ? '  <none>\n' : blocks.join('')}`,
    problems(placed),
    loadErrors(policy),
    recentChanges(placed, context.now),
  ].join('');
}

function statusOf(conditions: Condition[], type: string): string {
  return conditions.find((c) => c.type === type)?.status ?? '';
}

/** Whether `ref` (a route's parentRef) names the Gateway `gateway`. */
function refersTo(ref: unknown, route: ResourceObject, gateway: ResourceObject): boolean {
  const kind = text(field(ref, 'kind')) || 'Gateway';
  const namespace = text(field(ref, 'namespace')) || route.metadata.namespace;
  return (
    kind === 'Gateway' &&
    text(field(ref, 'name')) === gateway.metadata.name &&
    namespace === gateway.metadata.namespace
  );
}

function describeGateway(gateway: ResourceObject, context: DescribeContext): string {
  const { now } = context;
  const gatewayConditions = conditionsOf(gateway.status);
  const placed: PlacedCondition[] = gatewayConditions.map((c) => ({ ...c, where: 'Gateway' }));
  const className = text(field(gateway.spec, 'gatewayClassName'));
  const gatewayClass = context.gatewayClasses.find((c) => c.metadata.name === className);
  const classState =
    gatewayClass === undefined
      ? 'not found'
      : `Accepted=${statusOf(conditionsOf(gatewayClass.status), 'Accepted') || '<no status>'}, controller ${text(field(gatewayClass.spec, 'controllerName'))}`;
  const listenerStatuses = list(field(gateway.status, 'listeners'));
  const statusOfListener = (name: string) => listenerStatuses.find((l) => text(field(l, 'name')) === name);
  const listenerRows = list(field(gateway.spec, 'listeners')).map((l) => {
    const name = text(field(l, 'name'));
    const status = statusOfListener(name);
    return [
      name,
      text(field(l, 'protocol')),
      text(field(l, 'port')),
      text(field(l, 'hostname')) || '*',
      status === undefined ? '' : text(field(status, 'attachedRoutes')),
      status === undefined ? '' : statusOf(conditionsOf(status), 'Programmed'),
    ];
  });
  const listenerBlocks = listenerStatuses.map((status) => {
    const name = text(field(status, 'name'));
    const conditions = conditionsOf(status);
    placed.push(...conditions.map((c) => ({ ...c, where: `listener ${name}` })));
    const kinds = list(field(status, 'supportedKinds'))
      .map((k) => text(field(k, 'kind')))
      .join(', ');
    return `  ${name}:\n${labelled(
      [
        ['Supported Kinds', kinds || '<none>'],
        ['Attached Routes', text(field(status, 'attachedRoutes')) || '0'],
      ],
      4,
    )}\n    Conditions:\n${indent(conditionTable(conditions, now), 6)}`;
  });
  const addresses = list(field(gateway.status, 'addresses'))
    .map((a) => text(field(a, 'value')))
    .join(', ');
  const key = `${gateway.metadata.namespace}/${gateway.metadata.name}`;
  const routeRows = context.routes.flatMap((route) =>
    list(field(route.spec, 'parentRefs'))
      .filter((ref) => refersTo(ref, route, gateway))
      .map((ref) => {
        const parentStatus = list(field(route.status, 'parents')).find((p) =>
          refersTo(field(p, 'parentRef'), route, gateway),
        );
        const conditions = conditionsOf(parentStatus);
        return [
          route.kind,
          route.metadata.namespace ?? '',
          route.metadata.name,
          text(field(ref, 'sectionName')) || '*',
          statusOf(conditions, 'Accepted') || '<none>',
          statusOf(conditions, 'ResolvedRefs') || '<none>',
        ];
      }),
  );
  const fleet = context.fleets.find((f) => f.serves(key, className));
  const fleetText =
    context.fleetError === undefined ? fleetBlock(fleet) : `Fleet:  <unknown>: ${context.fleetError}\n`;
  return [
    header(gateway, now),
    labelled([
      ['Class', `${className} (${classState})`],
      ['Addresses', addresses || '<none>'],
    ]),
    '\n',
    `Listeners:\n${
      listenerRows.length === 0
        ? '  <none>\n'
        : indent(
            formatTable(['NAME', 'PROTOCOL', 'PORT', 'HOSTNAME', 'ATTACHED', 'PROGRAMMED'], listenerRows),
            2,
          )
    }`,
    `Conditions:\n${indent(conditionTable(gatewayConditions, now), 2)}`,
    listenerBlocks.length === 0 ? '' : `Listener Conditions:\n${listenerBlocks.join('')}`,
    `Routes:\n${
      routeRows.length === 0
        ? '  <none>\n'
        : indent(formatTable(['KIND', 'NAMESPACE', 'NAME', 'LISTENER', 'ACCEPTED', 'RESOLVED'], routeRows), 2)
    }`,
    fleetText,
    problems(placed),
    loadErrors(gateway),
    recentChanges(placed, now),
  ].join('');
}

function fleetBlock(fleet: FleetView | undefined): string {
  if (fleet === undefined) return 'Fleet:  <none> (no proxies run for it yet)\n';
  const proxies =
    fleet.proxies.rows.length === 0
      ? '    <none> connected\n'
      : indent(formatTable(fleet.proxies.header, fleet.proxies.rows), 4);
  return `Fleet:  ${fleet.fleet}\n${labelled(fleet.details, 2)}\n  Proxies:\n${proxies}`;
}

function describeMatch(match: unknown): string {
  const parts: string[] = [];
  const path = field(match, 'path');
  if (path !== undefined)
    parts.push(`${text(field(path, 'type')) || 'PathPrefix'} ${text(field(path, 'value')) || '/'}`);
  const method = field(match, 'method');
  if (method !== undefined)
    parts.push(
      typeof method === 'string'
        ? method
        : `${text(field(method, 'service'))}/${text(field(method, 'method'))}`,
    );
  for (const h of list(field(match, 'headers')))
    parts.push(`header ${text(field(h, 'name'))}=${text(field(h, 'value'))}`);
  for (const q of list(field(match, 'queryParams')))
    parts.push(`query ${text(field(q, 'name'))}=${text(field(q, 'value'))}`);
  return parts.join(' ');
}

function describeBackend(ref: unknown, routeNamespace: string | undefined): string {
  const namespace = text(field(ref, 'namespace'));
  const kind = text(field(ref, 'kind'));
  const weight = field(ref, 'weight');
  return `${kind !== '' && kind !== 'Service' ? `${kind} ` : ''}${namespace !== '' && namespace !== routeNamespace ? `${namespace}/` : ''}${text(field(ref, 'name'))}${field(ref, 'port') === undefined ? '' : `:${text(field(ref, 'port'))}`}${weight === undefined ? '' : ` (weight ${text(weight)})`}`;
}

function parentName(ref: unknown, route: ResourceObject): string {
  const namespace = text(field(ref, 'namespace')) || route.metadata.namespace || '';
  const section = text(field(ref, 'sectionName'));
  const port = text(field(ref, 'port'));
  return `${text(field(ref, 'kind')) || 'Gateway'} ${namespace}/${text(field(ref, 'name'))}${section === '' ? '' : ` listener ${section}`}${port === '' ? '' : ` port ${port}`}`;
}

/** Why a parentRef has no status entry: what the Gateway it names is, as far as describe can see. */
function whyNoStatus(ref: unknown, route: ResourceObject, context: DescribeContext): string {
  const kind = text(field(ref, 'kind')) || 'Gateway';
  if (kind !== 'Gateway') return `a ${kind} parent is not one this controller serves`;
  const namespace = text(field(ref, 'namespace')) || route.metadata.namespace;
  const name = text(field(ref, 'name'));
  const gateway = context.gateways.find(
    (g) => g.metadata.name === name && g.metadata.namespace === namespace,
  );
  if (gateway === undefined) return `Gateway ${namespace}/${name} does not exist`;
  const className = text(field(gateway.spec, 'gatewayClassName'));
  const gatewayClass = context.gatewayClasses.find((c) => c.metadata.name === className);
  if (gatewayClass === undefined) return `its GatewayClass ${className} does not exist`;
  if (gatewayClass.status === undefined || conditionsOf(gatewayClass.status).length === 0)
    return `its GatewayClass ${className} belongs to another controller (${text(field(gatewayClass.spec, 'controllerName'))})`;
  return 'no status reported for it yet';
}

function describeRoute(route: ResourceObject, context: DescribeContext): string {
  const { now } = context;
  const hostnames = list(field(route.spec, 'hostnames')).map(text);
  const refs = list(field(route.spec, 'parentRefs'));
  const parentStatuses = list(field(route.status, 'parents'));
  const placed: PlacedCondition[] = [];
  const parentBlocks = parentStatuses.map((p) => {
    const ref = field(p, 'parentRef');
    const where = `parent ${parentName(ref, route)}`;
    const conditions = conditionsOf(p);
    placed.push(...conditions.map((c) => ({ ...c, where })));
    return `  ${parentName(ref, route)} (controller ${text(field(p, 'controllerName'))}):\n${indent(conditionTable(conditions, now), 4)}`;
  });
  const unreported = refs.filter(
    (ref) =>
      !parentStatuses.some((p) => {
        const reported = field(p, 'parentRef');
        return parentName(reported, route) === parentName(ref, route);
      }),
  );
  const unreportedBlocks = unreported.map(
    (ref) => `  ${parentName(ref, route)}: no status: ${whyNoStatus(ref, route, context)}\n`,
  );
  const attached = parentStatuses.some((p) => statusOf(conditionsOf(p), 'Accepted') === 'True');
  const summary =
    refs.length === 0
      ? 'attached to no Gateway: the route has no parentRefs'
      : parentStatuses.length === 0
        ? 'attached to no Gateway: no Gateway of this controller reports it (see Parents)'
        : attached
          ? `attached to ${parentStatuses.filter((p) => statusOf(conditionsOf(p), 'Accepted') === 'True').length} of ${refs.length} parents`
          : 'attached to no Gateway: every parent refused it (see Parents)';
  if (parentStatuses.length === 0 && refs.length > 0)
    placed.push(
      ...unreported.map((ref) => ({
        type: 'Accepted',
        status: 'Unknown',
        reason: 'NoStatus',
        message: whyNoStatus(ref, route, context),
        where: `parent ${parentName(ref, route)}`,
      })),
    );
  const ruleRows = list(field(route.spec, 'rules')).map((rule, i) => {
    const matches = list(field(rule, 'matches'))
      .map(describeMatch)
      .filter((m) => m !== '');
    const backends = list(field(rule, 'backendRefs')).map((b) =>
      describeBackend(b, route.metadata.namespace),
    );
    const filters = list(field(rule, 'filters')).map((f) => text(field(f, 'type')));
    return [
      text(field(rule, 'name')) || String(i),
      matches.length === 0 ? '*' : matches.join(', '),
      filters.length === 0 ? '' : filters.join(', '),
      backends.length === 0 ? '<none>' : backends.join(', '),
    ];
  });
  return [
    header(route, now),
    labelled([
      ['Hostnames', hostnames.length === 0 ? '<any>' : hostnames.join(', ')],
      ['Parent Refs', refs.length === 0 ? '<none>' : refs.map((r) => parentName(r, route)).join(', ')],
      ['Status', summary],
    ]),
    '\n',
    `Rules:\n${ruleRows.length === 0 ? '  <none>\n' : indent(formatTable(['RULE', 'MATCHES', 'FILTERS', 'BACKENDS'], ruleRows), 2)}`,
    `Parents:\n${parentBlocks.join('')}${unreportedBlocks.join('')}${parentBlocks.length + unreportedBlocks.length === 0 ? '  <none>\n' : ''}`,
    problems(placed),
    loadErrors(route),
    recentChanges(
      placed.filter((c) => c.reason !== 'NoStatus'),
      now,
    ),
  ].join('');
}

// The pieces of a fleet build shared by the full build and the incremental update: a route's ranked IR
// routes, a VirtualHost from its contributing routes, and the bookkeeping that lets an edit touch only the
// VirtualHosts it changes (its state: fleet-build-state.ts).
import type { RouteObject } from '../api/route-kinds.js';
import type {
  Cluster,
  ClusterEndpoints,
  ListenerRequestFilter,
  RequestMirror,
  Route,
  RouteAction,
  VirtualHost,
} from '../ir/fleet-config.js';
import { type ClusterTable, clustersOf, type ResolvedCluster } from './backends.js';
import type { HostState, RouteEntry } from './fleet-build-state.js';
import { compareSpecificity, listenerServes, originalHostnameRank } from './hostnames.js';
import type { ListenerState } from './listeners.js';
import type { SnapshotLookup } from './lookup.js';
import type { ListenerPlace } from './policy-attachment.js';
import { rulePolicies, ruleSettings } from './portico-policies.js';
import { comparePrecedence, type RankedRoute } from './precedence.js';
import type { CompiledMirror } from './route-rules.js';
import type { GatewayEntry, RouteState } from './routes.js';
import type { PolicyAssignment, PolicySettings, TranslateMemos } from './types.js';

export interface FleetInput {
  key: string;
  /** The fleet's Gateways, oldest first. */
  gateways: GatewayEntry[];
  routes: Map<RouteObject, RouteState>;
  clusters: ClusterTable;
  lookup: SnapshotLookup;
  memos: TranslateMemos;
  /**
   * The routes changed since the last build, when the translation knows them (the rest are the same objects with
   * the same states): the update then looks at these, not at every attached route.
   */
  changed?: { removed: readonly RouteObject[]; added: readonly RouteObject[] };
  /** Which Portico policies listeners and route rules get; absent when there are none. */
  policies?: PolicyAssignment;
}

/** A rule's mirrors with a valid backend (an invalid one is reported and left out) that mirror anything. */
function requestMirrors(
  compiled: readonly CompiledMirror[],
  clusters: readonly (string | undefined)[],
): RequestMirror[] {
  const out: RequestMirror[] = [];
  compiled.forEach((m, i) => {
    const cluster = clusters[i];
    if (cluster !== undefined && m.fraction > 0) out.push({ cluster, fraction: m.fraction });
  });
  return out;
}

function ruleActions(rs: RouteState): RouteAction[] {
  return rs.compiled.rules.map((rule): RouteAction => {
    if (rule.redirect !== undefined) return rule.redirect;
    const resolved = rs.backends.rules[rule.index] ?? [];
    // No backendRefs, or every weight 0: nothing may ever be picked, so the rule answers 500.
    if (resolved.length === 0 || resolved.every((b) => b.weight === 0))
      return { type: 'DirectResponse', status: 500 };
    const action: RouteAction = {
      type: 'Forward',
      backends: resolved.map((b, k) => {
        const wb: { weight: number; cluster?: string; filters: typeof rule.filters } = {
          weight: b.weight,
          filters: rule.backendFilters[k] ?? [],
        };
        if (b.cluster !== undefined) wb.cluster = b.cluster;
        return wb;
      }),
      timeoutMs: rule.timeoutMs,
    };
    if (rule.backendTimeoutMs !== undefined) action.backendTimeoutMs = rule.backendTimeoutMs;
    if (rule.retry !== undefined) action.retry = rule.retry;
    const mirrors = requestMirrors(rule.mirrors, rs.backends.mirrors[rule.index] ?? []);
    if (mirrors.length > 0) action.mirrors = mirrors;
    return action;
  });
}

/**
 * `<ns>/<name>/rule/<i>/match/<j>` for an HTTPRoute; any other kind's has `<kind>/` before it (`GRPCRoute/`,
 * `TCPRoute/`…), so routes of two kinds with the same namespace and name never share a route name (metrics label
 * by it). Namespaces are lower case, so no HTTPRoute's name can start that way.
 */
export function irRouteName(route: RouteObject, rule: number, match: number): string {
  const prefix = route.kind === 'HTTPRoute' ? '' : `${route.kind}/`;
  return `${prefix}${route.metadata.namespace ?? ''}/${route.metadata.name}/rule/${rule}/match/${match}`;
}

function rankedRoutes(
  rs: RouteState,
  policies: (string[] | undefined)[],
  settings: (PolicySettings['route'] | undefined)[],
): RankedRoute[] {
  const actions = ruleActions(rs);
  const ns = rs.route.metadata.namespace ?? '';
  const name = rs.route.metadata.name;
  const routeRef: Route['routeRef'] = { namespace: ns, name, rule: 0 };
  if (rs.route.kind !== 'HTTPRoute') routeRef.kind = rs.route.kind;
  const out: RankedRoute[] = [];
  for (const rule of rs.compiled.rules) {
    rule.matches.forEach((match, j) => {
      const route: Route = {
        name: irRouteName(rs.route, rule.index, j),
        routeRef: { ...routeRef, rule: rule.index },
        match,
        filters: rule.filters,
        action: actions[rule.index]!,
      };
      const own = policies[rule.index];
      if (own !== undefined) route.policies = own;
      const set = settings[rule.index];
      if (set?.maxRequestBodyBytes !== undefined) route.maxRequestBodyBytes = set.maxRequestBodyBytes;
      if (set?.rateLimits !== undefined) route.rateLimits = set.rateLimits;
      const ranked: RankedRoute = {
        route,
        source: rs.route,
        rule: rule.index,
        match: j,
      };
      const grpc = rule.grpcRanks?.[j];
      if (grpc !== undefined) ranked.grpc = grpc;
      out.push(ranked);
    });
  }
  return out;
}

// An unchanged route (same object, same resolved backends) keeps its Route objects, so an unchanged
// VirtualHost is the previous object again and discovery re-sends only what an edit changed.
export function rankedRoutesOf(
  rs: RouteState,
  rankedMemo: TranslateMemos['rankedRoutes'],
  assignment?: PolicyAssignment,
  place?: ListenerPlace,
): RankedRoute[] {
  const policies =
    assignment === undefined
      ? []
      : rs.compiled.rules.map((rule) => rulePolicies(assignment, rs.route, rule.index));
  const settings =
    assignment === undefined
      ? []
      : rs.compiled.rules.map((rule) => ruleSettings(assignment, rs.route, rule.index, place));
  // A route served through listeners whose default settings differ is rebuilt per listener: correct, not cached.
  const policyKey = assignment === undefined ? '' : JSON.stringify([policies, settings]);
  const hit = rankedMemo.get(rs.route);
  if (hit !== undefined && hit.backends === rs.backends && hit.policyKey === policyKey) return hit.ranked;
  const ranked = rankedRoutes(rs, policies, settings);
  rankedMemo.set(rs.route, { backends: rs.backends, policyKey, ranked });
  return ranked;
}

export function sameItems(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The host's VirtualHost from its contributors; `before` again when its routes are the same objects. */
export function hostVirtualHost(
  host: HostState,
  before: VirtualHost | undefined,
  rankedMemo: TranslateMemos['rankedRoutes'],
  policies?: { assignment: PolicyAssignment; listener: string[] | undefined; place: ListenerPlace },
  requestFilters?: ListenerRequestFilter[],
): VirtualHost {
  const ranked: RankedRoute[] = [];
  // Rules of the route whose own hostname is the more specific come first, whatever their matches.
  const hostRank = new Map<RouteObject, number>();
  for (const rs of host.contributors.values()) {
    ranked.push(...rankedRoutesOf(rs, rankedMemo, policies?.assignment, policies?.place));
    hostRank.set(rs.route, originalHostnameRank(rs.route.spec.hostnames, host.hostname));
  }
  ranked.sort((a, b) => hostRank.get(b.source)! - hostRank.get(a.source)! || comparePrecedence(a, b));
  const routes = ranked.map((r) => r.route);
  const own = policies?.listener;
  if (
    before !== undefined &&
    before.hostname === host.hostname &&
    sameItems(before.routes, routes) &&
    sameItems(before.policies ?? [], own ?? []) &&
    JSON.stringify(before.requestFilters) === JSON.stringify(requestFilters)
  )
    return before;
  const vhost: VirtualHost = { name: host.name, listener: host.listener, hostname: host.hostname, routes };
  if (own !== undefined) vhost.policies = own;
  if (requestFilters !== undefined) vhost.requestFilters = requestFilters;
  return vhost;
}

/** A route's entry through one listener, before the hosts it serves are known. */
export function routeEntry(listener: number, rs: RouteState, hostnames: string[]): RouteEntry {
  return { listener, rs, hostnames, targets: [], clusters: clustersOf(rs.backends) };
}

export function byName<T extends { name: string }>(a: T, b: T): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** The owner of a VirtualHost for `h`: the most specific of a port's listeners (`indexes`, in order) serving it. */
export function hostOwner(
  indexes: readonly number[],
  listeners: ListenerState[],
  h: string,
): number | undefined {
  let best: number | undefined;
  for (const li of indexes) {
    const l = listeners[li]!;
    if (!listenerServes(l.spec.hostname, h)) continue;
    if (best === undefined || compareSpecificity(l.spec.hostname, listeners[best]!.spec.hostname) < 0)
      best = li;
  }
  return best;
}

/** Clusters and endpoints of the used cluster names, sorted by name. */
export function fleetClusters(
  used: Iterable<string>,
  table: ClusterTable,
): { clusters: Cluster[]; endpoints: ClusterEndpoints[]; objects: Map<string, ResolvedCluster> } {
  const clusters: Cluster[] = [];
  const endpoints: ClusterEndpoints[] = [];
  const objects = new Map<string, ResolvedCluster>();
  for (const name of used) {
    const c = table.get(name);
    if (c === undefined) continue;
    objects.set(name, c);
    clusters.push(c.cluster);
    endpoints.push(c.endpoints);
  }
  return { clusters: clusters.sort(byName), endpoints: endpoints.sort(byName), objects };
}

// Gateway API match precedence across all routes of a VirtualHost (after the routes' own hostnames: fleet-hosts.ts). HTTPRoute: Exact path >
// RegularExpression (longest pattern) > longest PathPrefix > has method > most headers > most query params;
// GRPCRoute: Exact > RegularExpression > any method, then longest service > longest method > most headers; then oldest route > namespace/name > rule order >
// match order.
import type { RouteObject } from '../api/route-kinds.js';
import type { Route } from '../ir/fleet-config.js';
import type { GrpcMatchRank } from './grpc-method-path.js';

export interface RankedRoute {
  route: Route;
  source: RouteObject;
  rule: number;
  match: number;
  /** GRPCRoute matches: what the GRPCRoute precedence ranks them by. */
  grpc?: GrpcMatchRank;
}

// The Gateway API leaves regular expressions' rank to implementations: above prefixes, so a catch-all `/`
// prefix never shadows them.
const PATH_RANK = { Exact: 0, RegularExpression: 1, PathPrefix: 2 } as const;

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function comparePrecedence(a: RankedRoute, b: RankedRoute): number {
  // A VirtualHost holds one kind only where kinds would compete (route-kind-conflicts.ts); gRPC ranks apply there.
  if (a.grpc !== undefined && b.grpc !== undefined) return compareGrpc(a, a.grpc, b, b.grpc);
  const ma = a.route.match;
  const mb = b.route.match;
  const pa = ma.path ?? { type: 'PathPrefix', value: '/' };
  const pb = mb.path ?? { type: 'PathPrefix', value: '/' };
  if (pa.type !== pb.type) return PATH_RANK[pa.type] - PATH_RANK[pb.type];
  if (pa.value.length !== pb.value.length) return pb.value.length - pa.value.length;
  const methodA = ma.method === undefined ? 1 : 0;
  const methodB = mb.method === undefined ? 1 : 0;
  if (methodA !== methodB) return methodA - methodB;
  if (ma.headers.length !== mb.headers.length) return mb.headers.length - ma.headers.length;
  if (ma.queryParams.length !== mb.queryParams.length) return mb.queryParams.length - ma.queryParams.length;
  return compareRouteOrder(a, b);
}

/** Oldest route first (routes without a creation time, from files, count as newest), then namespace/name. */
export function compareRouteAge(a: RouteObject, b: RouteObject): number {
  const ta = a.metadata.creationTimestamp;
  const tb = b.metadata.creationTimestamp;
  if (ta !== tb) {
    if (ta === undefined) return 1;
    if (tb === undefined) return -1;
    return cmp(ta, tb);
  }
  return cmp(`${a.metadata.namespace}/${a.metadata.name}`, `${b.metadata.namespace}/${b.metadata.name}`);
}

/** The tie-breakers both kinds share: route age, namespace/name, then rule and match order. */
function compareRouteOrder(a: RankedRoute, b: RankedRoute): number {
  if (a.source !== b.source) {
    const byAge = compareRouteAge(a.source, b.source);
    if (byAge !== 0) return byAge;
  }
  if (a.rule !== b.rule) return a.rule - b.rule;
  return a.match - b.match;
}

/** GRPCRoute precedence: most characters of service, then of method, then most header matches. */
function compareGrpc(a: RankedRoute, ra: GrpcMatchRank, b: RankedRoute, rb: GrpcMatchRank): number {
  if (ra.tier !== rb.tier) return ra.tier - rb.tier;
  if (ra.service !== rb.service) return rb.service - ra.service;
  if (ra.method !== rb.method) return rb.method - ra.method;
  const ha = a.route.match.headers.length;
  const hb = b.route.match.headers.length;
  if (ha !== hb) return hb - ha;
  return compareRouteOrder(a, b);
}

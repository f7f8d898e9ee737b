// Gateway API match precedence across all routes of a VirtualHost (DESIGN.md §7):
// Exact path > RegularExpression (longest pattern) > longest PathPrefix > has method > most headers > most query
// params > oldest route > namespace/name > rule order > match order.
import type { HTTPRoute } from '../api/http-route.js';
import type { Route } from '../ir/fleet-config.js';

export interface RankedRoute {
  route: Route;
  source: HTTPRoute;
  rule: number;
  match: number;
}

// The Gateway API leaves regular expressions' rank to implementations: above prefixes, so a catch-all `/`
// prefix never shadows them.
const PATH_RANK = { Exact: 0, RegularExpression: 1, PathPrefix: 2 } as const;

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function comparePrecedence(a: RankedRoute, b: RankedRoute): number {
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
  if (a.source !== b.source) {
    // Routes without a creation time (files) count as newer than any that has one.
    const ta = a.source.metadata.creationTimestamp;
    const tb = b.source.metadata.creationTimestamp;
    if (ta !== tb) {
      if (ta === undefined) return 1;
      if (tb === undefined) return -1;
      return cmp(ta, tb);
    }
    const byName = cmp(
      `${a.source.metadata.namespace}/${a.source.metadata.name}`,
      `${b.source.metadata.namespace}/${b.source.metadata.name}`,
    );
    if (byName !== 0) return byName;
  }
  if (a.rule !== b.rule) return a.rule - b.rule;
  return a.match - b.match;
}

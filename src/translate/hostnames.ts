// Hostname algebra of the Gateway API: wildcard coverage, intersection, and specificity order.

export function isWildcard(h: string): boolean {
  return h.startsWith('*.');
}

/** Does wildcard `w` (`*.example.com`, one or more labels) cover `h` (exact or a narrower wildcard)? */
export function covers(w: string, h: string): boolean {
  if (!isWildcard(w)) return false;
  const suffix = w.slice(1);
  return h.length > suffix.length && h.endsWith(suffix) && h !== w;
}

/** The hostnames matched by both, as one hostname (the narrower), or undefined when disjoint. */
export function intersectHostnames(a: string, b: string): string | undefined {
  if (a === b) return a;
  if (covers(a, b)) return b;
  if (covers(b, a)) return a;
  return undefined;
}

/**
 * The hostnames a route serves through a listener: listener ∩ route, the route's own when the listener
 * has none, the listener's when the route has none, `*` when neither has any. Empty: no match at all.
 */
export function effectiveHostnames(
  listenerHostname: string | undefined,
  routeHostnames: readonly string[],
): string[] {
  if (routeHostnames.length === 0) return [listenerHostname ?? '*'];
  const out = new Set<string>();
  for (const r of routeHostnames) {
    const h = listenerHostname === undefined ? r : intersectHostnames(listenerHostname, r);
    if (h !== undefined) out.add(h);
  }
  return [...out];
}

/** Would a listener with this hostname (undefined: any) receive every request for vhost hostname `h`? */
export function listenerServes(listenerHostname: string | undefined, h: string): boolean {
  if (listenerHostname === undefined) return true;
  return listenerHostname === h || covers(listenerHostname, h);
}

/** Most specific first: exact names, then wildcards (longer suffix first), then `*`; ties by name. */
export function compareSpecificity(a: string | undefined, b: string | undefined): number {
  const rank = (h: string | undefined) => (h === undefined || h === '*' ? 2 : isWildcard(h) ? 1 : 0);
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  const sa = a ?? '';
  const sb = b ?? '';
  if (ra === 1 && sa.length !== sb.length) return sb.length - sa.length;
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/**
 * How specific a route's own hostnames are for the VirtualHost hostname `h` (Gateway API route precedence,
 * feature GatewayRouteHostnameIntersectionPrecedence): of the route hostnames that match `h`, the most characters
 * of an exact one, then the most characters of any, as one number (higher wins). A route without hostnames
 * matches everything and ranks 0. Ranked by the route's original hostnames, not their intersection with the
 * listener's, so `abc.example.com` outranks `*.example.com` on a listener for `abc.example.com`.
 */
export function originalHostnameRank(routeHostnames: readonly string[], h: string): number {
  let exact = 0;
  let any = 0;
  for (const r of routeHostnames) {
    if (r !== h && !covers(r, h)) continue;
    if (!isWildcard(r)) exact = Math.max(exact, r.length);
    any = Math.max(any, r.length);
  }
  // Hostnames have at most 253 characters: the exact length dominates.
  return exact * 1024 + any;
}

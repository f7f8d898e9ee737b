// A TLSRoute's, TCPRoute's or UDPRoute's one rule in fleet-config terms: a match-all route whose action forwards
// to its weighted backends. A TLSRoute's hostnames (SNI) select its VirtualHosts as an HTTPRoute's do.
import type { Layer4Route } from '../api/layer4-routes.js';
import type { CompiledRoute, CompiledRule } from './route-rules.js';
import { hostnameProblems } from './route-rules.js';

/** A connection is bounded by its peers and the proxy's idle limits, not by a route timeout. */
const NO_ROUTE_TIMEOUT = 0;

export function compileLayer4Route(route: Layer4Route): CompiledRoute {
  const rules = route.spec.rules.map(
    (rule, i): CompiledRule => ({
      index: i,
      matches: [{ headers: [], queryParams: [] }],
      filters: [],
      mirrors: [],
      backendFilters: rule.backendRefs.map(() => []),
      timeoutMs: NO_ROUTE_TIMEOUT,
    }),
  );
  return { rules, unsupported: hostnameProblems(route.spec.hostnames) };
}

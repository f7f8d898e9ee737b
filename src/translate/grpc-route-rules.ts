// A GRPCRoute's rules in fleet-config terms: method matches become path matches, header matches and filters
// are HTTPRoute's, and the GRPCRoute precedence ranks go with each match.
import type { GRPCRoute, GRPCRouteMatch } from '../api/grpc-route.js';
import { regexProblem } from '../ir/field-rules.js';
import type { RouteMatch } from '../ir/fleet-config.js';
import { type GrpcMatchRank, grpcMatchRank, grpcMethodPath } from './grpc-method-path.js';
import {
  type CompiledRoute,
  type CompiledRule,
  check,
  compileFilters,
  compileHeaderMatches,
  hostnameProblems,
} from './route-rules.js';

// gRPC calls carry their own deadline (grpc-timeout) and streams may last for hours: no route timeout.
const GRPC_ROUTE_TIMEOUT_MS = 0;

function compileMatch(
  m: GRPCRouteMatch,
  at: string,
  unsupported: string[],
): { match: RouteMatch; rank: GrpcMatchRank } {
  const match: RouteMatch = { headers: compileHeaderMatches(m.headers, at, unsupported), queryParams: [] };
  const path = grpcMethodPath(m.method);
  if (path !== undefined) {
    if (path.type === 'RegularExpression') {
      // Each pattern's own problem names its field; the path pattern they make up can add only its size.
      const before = unsupported.length;
      if (m.method?.type === 'RegularExpression') {
        for (const field of ['service', 'method'] as const) {
          const pattern = m.method[field];
          if (pattern !== undefined) check(unsupported, `${at}.method.${field}`, regexProblem(pattern));
        }
      }
      if (unsupported.length === before) check(unsupported, `${at}.method`, regexProblem(path.value));
    }
    match.path = path;
  }
  return { match, rank: grpcMatchRank(m.method) };
}

export function compileGrpcRoute(route: GRPCRoute): CompiledRoute {
  const unsupported = hostnameProblems(route.spec.hostnames);
  const rules = route.spec.rules.map((rule, i): CompiledRule => {
    const at = `spec.rules[${i}]`;
    // No matches: every gRPC request.
    const matches = rule.matches.length === 0 ? [{ headers: [] }] : rule.matches;
    const compiled = matches.map((m, j) => compileMatch(m, `${at}.matches[${j}]`, unsupported));
    const ns = route.metadata.namespace ?? '';
    const { filters, mirrors } = compileFilters(rule.filters, `${at}.filters`, unsupported, true, ns);
    const backendFilters = rule.backendRefs.map(
      (b, k) => compileFilters(b.filters, `${at}.backendRefs[${k}].filters`, unsupported, false, ns).filters,
    );
    return {
      index: i,
      matches: compiled.map((c) => c.match),
      filters,
      mirrors,
      backendFilters,
      timeoutMs: GRPC_ROUTE_TIMEOUT_MS,
      grpcRanks: compiled.map((c) => c.rank),
    };
  });
  return { rules, unsupported };
}

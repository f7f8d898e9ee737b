// A GRPCRoute method match as a fleet-config path match: a gRPC request's path is `/<service>/<method>`.
import type { GRPCMethodMatch } from '../api/grpc-route.js';
import type { PathMatch } from '../ir/fleet-config.js';

/** RE2: one path segment, whatever it holds. */
const ANY_SEGMENT = '[^/]+';

/** `text` as an RE2 pattern that matches exactly it. */
export function re2Literal(text: string): string {
  return text.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&');
}

/**
 * What the GRPCRoute precedence ranks a match by: the characters of service and method it names. Patterns are
 * not names, so (an implementation's choice the API leaves open) RegularExpression matches come after every
 * Exact one, and matches without a method match (every call) last.
 */
export interface GrpcMatchRank {
  /** 0: Exact, 1: RegularExpression, 2: any method. */
  tier: 0 | 1 | 2;
  service: number;
  method: number;
}

function named(value: string | undefined): string | undefined {
  // The API reads an empty service or method as left out: any.
  return value === '' ? undefined : value;
}

export function grpcMatchRank(m: GRPCMethodMatch | undefined): GrpcMatchRank {
  const service = named(m?.service)?.length ?? 0;
  const method = named(m?.method)?.length ?? 0;
  const tier = m === undefined || service + method === 0 ? 2 : m.type === 'Exact' ? 0 : 1;
  return { tier, service, method };
}

/**
 * The path match of a method match; undefined matches every path. Exact service and method is an Exact path,
 * a service alone a path prefix (whole segments), a method alone or any RegularExpression an RE2 pattern,
 * which the fleet config matches against the whole path (a RegularExpression must match its whole segment).
 */
export function grpcMethodPath(m: GRPCMethodMatch | undefined): PathMatch | undefined {
  const service = named(m?.service);
  const method = named(m?.method);
  if (m === undefined || (service === undefined && method === undefined)) return undefined;
  if (m.type === 'Exact') {
    if (service !== undefined && method !== undefined)
      return { type: 'Exact', value: `/${service}/${method}` };
    if (service !== undefined) return { type: 'PathPrefix', value: `/${service}` };
    return { type: 'RegularExpression', value: `/${ANY_SEGMENT}/${re2Literal(method!)}` };
  }
  const servicePattern = service === undefined ? ANY_SEGMENT : `(?:${service})`;
  const methodPattern = method === undefined ? ANY_SEGMENT : `(?:${method})`;
  return { type: 'RegularExpression', value: `/${servicePattern}/${methodPattern}` };
}

// The HTTPRoute CORS filter at request time: which origins a route admits (the Gateway API's wildcards and default
// ports), the proxy's own answer to a preflight, and the headers an actual response gets. Pure functions of the
// policy and the request's header lines.

import { isFieldValue, isHeaderName } from '../../ir/field-rules.js';
import type { CorsPolicy, HeaderModifier } from '../../ir/fleet-config.js';

/** An origin as compared: lower-case scheme and host, and the port (the scheme's default when absent). */
export interface ParsedOrigin {
  scheme: string;
  host: string;
  port: number;
}

const DEFAULT_PORTS: Record<string, number> = { http: 80, https: 443 };

// A serialized origin: scheme, host (an IPv6 literal in brackets) and an optional port; no path, no list.
const ORIGIN = /^([a-z][a-z0-9+.-]*):\/\/(\[[0-9a-f:.]+\]|[^\s/?#[\]@:,]+)(?::([0-9]{1,5}))?$/;

/** A request's `Origin` value parsed, or undefined for `null` (an opaque origin) and anything malformed. */
export function parseOrigin(text: string): ParsedOrigin | undefined {
  const m = ORIGIN.exec(text.toLowerCase());
  if (m === null) return undefined;
  const scheme = m[1]!;
  const port = m[3] === undefined ? (DEFAULT_PORTS[scheme] ?? 0) : Number(m[3]);
  if (port > 65535) return undefined;
  return { scheme, host: m[2]!, port };
}

/** One allowed origin, compiled: `host` is exact, a `.suffix` (from `*.`), or '' for a `*` host. */
interface OriginPattern {
  scheme: string;
  host: string;
  suffix: boolean;
  port: number;
}

/** `any`: the policy allows every origin (`*`). */
type CompiledOrigins = OriginPattern[] | 'any';

const compiledPolicies = new WeakMap<CorsPolicy, CompiledOrigins>();

function compileOrigins(policy: CorsPolicy): CompiledOrigins {
  let hit = compiledPolicies.get(policy);
  if (hit !== undefined) return hit;
  if (policy.allowOrigins.includes('*')) hit = 'any';
  else {
    hit = [];
    for (const text of policy.allowOrigins) {
      // Validated as http(s)://host[:port] with the host `*`, `*.name` or a name (ir/field-rules.ts).
      const at = text.indexOf('://');
      const scheme = text.slice(0, at);
      const rest = text.slice(at + 3);
      const colon = rest.indexOf(':');
      const host = colon < 0 ? rest : rest.slice(0, colon);
      const port = colon < 0 ? (DEFAULT_PORTS[scheme] ?? 0) : Number(rest.slice(colon + 1));
      if (host.startsWith('*.')) hit.push({ scheme, host: host.slice(1), suffix: true, port });
      else hit.push({ scheme, host: host === '*' ? '' : host, suffix: false, port });
    }
  }
  compiledPolicies.set(policy, hit);
  return hit;
}

/**
 * Whether the policy admits the origin. `*` admits every serialized origin but `null` (sandboxed documents and
 * redirects, which an echo would hand credentials); `*.bar.com` covers one or more labels before `.bar.com`.
 */
export function originAllowed(policy: CorsPolicy, origin: string): boolean {
  const parsed = parseOrigin(origin);
  if (parsed === undefined) return false;
  const patterns = compileOrigins(policy);
  if (patterns === 'any') return true;
  for (const p of patterns) {
    if (p.scheme !== parsed.scheme || p.port !== parsed.port) continue;
    if (p.host === '') return true;
    if (p.suffix) {
      if (parsed.host.length > p.host.length && parsed.host.endsWith(p.host)) return true;
    } else if (parsed.host === p.host) return true;
  }
  return false;
}

/** What CORS reads of a request: its Origin (undefined when absent or repeated) and the preflight's questions. */
export interface CorsRequest {
  origin: string | undefined;
  /** `Access-Control-Request-Method`: present on a preflight. */
  requestMethod: string | undefined;
  /** `Access-Control-Request-Headers`, several lines joined with `, `. */
  requestHeaders: string | undefined;
}

/** Reads the CORS request headers from header lines (name, value, ...) in one pass. */
export function corsRequest(raw: readonly string[]): CorsRequest {
  let origin: string | undefined;
  let origins = 0;
  let requestMethod: string | undefined;
  let requestHeaders: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    // Cheap length filter first: most lines are none of these three.
    if (name.length !== 6 && name.length !== 29 && name.length !== 30) continue;
    const lower = name.toLowerCase();
    const value = raw[i + 1]!;
    if (lower === 'origin') {
      origins++;
      origin = value;
    } else if (lower === 'access-control-request-method') requestMethod ??= value;
    else if (lower === 'access-control-request-headers')
      requestHeaders = requestHeaders === undefined ? value : `${requestHeaders}, ${value}`;
  }
  // Two Origin lines are no origin: a browser sends one, and which to believe is a guess.
  return { origin: origins === 1 ? origin : undefined, requestMethod, requestHeaders };
}

/** A preflight: OPTIONS with an Origin and the method the browser asks to use. */
export function isPreflight(method: string, request: CorsRequest): boolean {
  return method === 'OPTIONS' && request.origin !== undefined && request.requestMethod !== undefined;
}

/** The header names a preflight asks for, when every one is a header name; undefined otherwise. */
function requestedHeaderNames(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const names = text
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  return names.length > 0 && names.every(isHeaderName) ? names.join(', ') : undefined;
}

/** The `Access-Control-Expose-Headers` value, if any: `*` means all only without credentials. */
function exposeValue(policy: CorsPolicy): string | undefined {
  const expose = policy.exposeHeaders;
  if (expose.length === 0) return undefined;
  if (expose[0] === '*' && policy.allowCredentials) return undefined;
  return expose.join(', ');
}

/**
 * The header lines (name, value, ...) of the proxy's answer to a preflight. An origin the policy does not admit
 * gets none of the access-control headers, so the browser refuses the actual request. The origin, method and
 * headers asked are echoed where the policy says `*` (which with credentials may not be sent as `*`).
 */
export function preflightHeaders(policy: CorsPolicy, request: CorsRequest): string[] {
  const lines = ['vary', 'origin, access-control-request-method, access-control-request-headers'];
  const origin = request.origin;
  if (origin === undefined || !isFieldValue(origin) || !originAllowed(policy, origin)) return lines;
  lines.push('access-control-allow-origin', origin);
  if (policy.allowCredentials) lines.push('access-control-allow-credentials', 'true');
  const methods = policy.allowMethods;
  if (methods.length > 0) {
    if (methods[0] !== '*') lines.push('access-control-allow-methods', methods.join(', '));
    else if (request.requestMethod !== undefined && isHeaderName(request.requestMethod))
      lines.push('access-control-allow-methods', request.requestMethod);
  }
  const headers = policy.allowHeaders;
  if (headers.length > 0) {
    if (headers[0] !== '*') lines.push('access-control-allow-headers', headers.join(', '));
    else {
      const asked = requestedHeaderNames(request.requestHeaders);
      if (asked !== undefined) lines.push('access-control-allow-headers', asked);
    }
  }
  const expose = exposeValue(policy);
  if (expose !== undefined) lines.push('access-control-expose-headers', expose);
  lines.push('access-control-max-age', String(policy.maxAgeSeconds));
  return lines;
}

/** The CORS headers of a response; a backend's own are replaced, since the route's policy decides them. */
const RESPONSE_CORS_HEADERS = [
  'access-control-allow-origin',
  'access-control-allow-credentials',
  'access-control-expose-headers',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
];

const VARY_ORIGIN = [{ name: 'vary', value: 'origin' }];

/** A response modifier that removes only the backend's CORS headers: an origin the policy does not admit. */
const DENIED: HeaderModifier = { set: [], add: VARY_ORIGIN, remove: RESPONSE_CORS_HEADERS };

/**
 * The response header modifier of an actual (not preflight) request on a route with a CORS policy: the admitted
 * origin echoed (with credentials and exposed headers as configured), `Vary: origin` always, since the answer
 * depends on the Origin whether or not this one was admitted.
 */
export function corsResponseModifier(policy: CorsPolicy, request: CorsRequest): HeaderModifier {
  const origin = request.origin;
  if (origin === undefined || !isFieldValue(origin) || !originAllowed(policy, origin)) return DENIED;
  const set = [{ name: 'access-control-allow-origin', value: origin }];
  if (policy.allowCredentials) set.push({ name: 'access-control-allow-credentials', value: 'true' });
  const expose = exposeValue(policy);
  if (expose !== undefined) set.push({ name: 'access-control-expose-headers', value: expose });
  const remove = RESPONSE_CORS_HEADERS.filter((name) => !set.some((h) => h.name === name));
  return { set, add: VARY_ORIGIN, remove };
}

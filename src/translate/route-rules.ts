// An HTTPRoute's rules in fleet-config terms (matches, filters, redirect, timeouts), and the pieces GRPCRoute
// rules share with them (header matches, filters, hostnames): pure functions of the route alone.
import { isIP } from 'node:net';
import type {
  CORSFilter,
  ExternalAuthFilter,
  HTTPRoute,
  HTTPRouteFilter,
  HTTPRouteMatch,
  RequestMirror,
} from '../api/http-route.js';
import { durationMs } from '../api/semantic-rules.js';
import {
  DEFAULT_EXTERNAL_AUTH_TIMEOUT_MS,
  type ExternalAuthorization,
  MAX_EXTERNAL_AUTH_BODY_BYTES,
} from '../ir/external-auth.js';
import {
  authPathPrefixProblem,
  corsOriginProblem,
  headerValueProblem,
  isHeaderName,
  pathProblem,
  preciseHostnameProblem,
  regexProblem,
  timeoutProblem,
} from '../ir/field-rules.js';
import {
  type CorsPolicy,
  DEFAULT_ROUTE_TIMEOUT_MS,
  type HeaderMatch,
  type HeaderModifier,
  type PathModifier,
  type RedirectAction,
  type RetryPolicy,
  type RouteFilter,
  type RouteMatch,
} from '../ir/fleet-config.js';
import type { GrpcMatchRank } from './grpc-method-path.js';

/** A RequestMirror filter of a rule: its backend (resolved with the rule's backendRefs) and its share. */
export interface CompiledMirror {
  backendRef: RequestMirror['backendRef'];
  /** Of requests, the share mirrored: 0 to 1 (percent / 100, or numerator / denominator). */
  fraction: number;
}

export interface CompiledRule {
  index: number;
  matches: RouteMatch[];
  filters: RouteFilter[];
  /** RequestMirror filters, in order: each gets a copy of (its share of) the requests the rule forwards. */
  mirrors: CompiledMirror[];
  /** Per backendRef, its own filters. */
  backendFilters: RouteFilter[][];
  redirect?: RedirectAction;
  timeoutMs: number;
  backendTimeoutMs?: number;
  retry?: RetryPolicy;
  /** GRPCRoute rules: per match, what the GRPCRoute precedence ranks it by (instead of its path). */
  grpcRanks?: GrpcMatchRank[];
}

export interface CompiledRoute {
  rules: CompiledRule[];
  /** `field: message` for every value this implementation does not support; non-empty: not Accepted. */
  unsupported: string[];
}

function headerModifier(m: {
  set: { name: string; value: string }[];
  add: { name: string; value: string }[];
  remove: string[];
}): HeaderModifier {
  return {
    set: m.set.map((h) => ({ name: h.name.toLowerCase(), value: h.value })),
    add: m.add.map((h) => ({ name: h.name.toLowerCase(), value: h.value })),
    // A name that is no header name matches no request header: removing it is a no-op the fleet config omits.
    remove: m.remove.filter(isHeaderName).map((h) => h.toLowerCase()),
  };
}

function pathModifier(p: {
  type: 'ReplaceFullPath' | 'ReplacePrefixMatch';
  replaceFullPath?: string;
  replacePrefixMatch?: string;
}): PathModifier {
  return p.type === 'ReplaceFullPath'
    ? { type: 'ReplaceFullPath', value: p.replaceFullPath ?? '/' }
    : { type: 'ReplacePrefixMatch', value: p.replacePrefixMatch ?? '/' };
}

/** Records `field: problem` when a value breaks a fleet config field rule (the proxy applies the same rules). */
export function check(unsupported: string[], field: string, problem: string | undefined): void {
  if (problem !== undefined) unsupported.push(`${field}: ${problem}`);
}

function checkHeaderModifier(m: HeaderModifier, at: string, unsupported: string[]): void {
  for (const list of ['set', 'add'] as const) {
    for (const [j, h] of m[list].entries()) {
      check(unsupported, `${at}.${list}[${j}].value`, headerValueProblem(h.value));
    }
  }
}

function checkPathModifier(p: PathModifier, at: string, unsupported: string[]): void {
  const field = p.type === 'ReplaceFullPath' ? 'replaceFullPath' : 'replacePrefixMatch';
  check(unsupported, `${at}.${field}`, pathProblem(p.value));
}

/**
 * A CORS filter with the Gateway API's defaults: origins compared in lower case (scheme and host are
 * case-insensitive), no credentials unless set, max age as the CRD defaulted it.
 */
function corsPolicy(f: CORSFilter, at: string, unsupported: string[]): CorsPolicy {
  const allowOrigins = f.allowOrigins.map((o) => o.toLowerCase());
  allowOrigins.forEach((o, i) => {
    check(unsupported, `${at}.allowOrigins[${i}]`, corsOriginProblem(o));
  });
  return {
    allowOrigins,
    allowMethods: [...f.allowMethods],
    allowHeaders: [...f.allowHeaders],
    exposeHeaders: [...f.exposeHeaders],
    maxAgeSeconds: f.maxAge,
    allowCredentials: f.allowCredentials === true,
  };
}

/**
 * An ExternalAuth filter (Gateway API v1.7 experimental) as the proxy runs it: the Service it names as a cluster
 * (resolved, granted and given endpoints with the route's backends, backends.ts), and the CRD's CEL rules checked
 * here too so standalone files and `portico translate` refuse what the API server would.
 */
export function externalAuthorization(
  f: ExternalAuthFilter,
  at: string,
  namespace: string,
  unsupported: string[],
): ExternalAuthorization {
  if (f.protocol === 'GRPC' && f.grpc === undefined)
    unsupported.push(`${at}.grpc: required when protocol is GRPC`);
  if (f.protocol !== 'GRPC' && f.grpc !== undefined)
    unsupported.push(`${at}.grpc: only when protocol is GRPC`);
  if (f.protocol === 'HTTP' && f.http === undefined)
    unsupported.push(`${at}.http: required when protocol is HTTP`);
  if (f.protocol !== 'HTTP' && f.http !== undefined)
    unsupported.push(`${at}.http: only when protocol is HTTP`);
  if (f.backendRef.port === undefined) unsupported.push(`${at}.backendRef.port: required for a Service`);
  const maxSize = f.forwardBody?.maxSize ?? 0;
  if (maxSize > MAX_EXTERNAL_AUTH_BODY_BYTES)
    unsupported.push(`${at}.forwardBody.maxSize: at most ${MAX_EXTERNAL_AUTH_BODY_BYTES} bytes are buffered`);
  const pathPrefix = f.http?.path ?? '';
  check(unsupported, `${at}.http.path`, authPathPrefixProblem(pathPrefix));
  const lower = (names: readonly string[] | undefined): string[] => (names ?? []).map((n) => n.toLowerCase());
  return {
    protocol: f.protocol,
    cluster: `${f.backendRef.namespace ?? namespace}/${f.backendRef.name}:${f.backendRef.port ?? 0}`,
    allowedRequestHeaders: lower(f.protocol === 'GRPC' ? f.grpc?.allowedHeaders : f.http?.allowedHeaders),
    pathPrefix,
    allowedResponseHeaders: lower(f.http?.allowedResponseHeaders),
    forwardBodyMaxBytes: Math.min(maxSize, MAX_EXTERNAL_AUTH_BODY_BYTES),
    timeoutMs: DEFAULT_EXTERNAL_AUTH_TIMEOUT_MS,
    // The filter has no such field: an authorization service that cannot answer refuses (fail closed).
    failOpen: false,
  };
}

function compileMatch(m: HTTPRouteMatch, at: string, unsupported: string[]): RouteMatch {
  const out: RouteMatch = { headers: [], queryParams: [] };
  const p = m.path;
  if (p.type === 'PathPrefix') {
    // Trailing slashes do not change a segment-wise prefix: `/foo/` matches like `/foo`.
    const value = p.value.length > 1 ? p.value.replace(/\/+$/, '') || '/' : p.value;
    out.path = { type: 'PathPrefix', value };
  } else {
    if (p.type === 'RegularExpression') check(unsupported, `${at}.path.value`, regexProblem(p.value));
    out.path = { type: p.type, value: p.value };
  }
  out.headers = compileHeaderMatches(m.headers, at, unsupported);
  m.queryParams.forEach((q, i) => {
    if (q.type === 'RegularExpression')
      check(unsupported, `${at}.queryParams[${i}].value`, regexProblem(q.value));
    out.queryParams.push({ type: q.type, name: q.name, value: q.value });
  });
  if (m.method !== undefined) out.method = m.method;
  return out;
}

export function compileHeaderMatches(
  headers: { type: 'Exact' | 'RegularExpression'; name: string; value: string }[],
  at: string,
  unsupported: string[],
): HeaderMatch[] {
  return headers.map((h, i) => {
    if (h.type === 'RegularExpression')
      check(unsupported, `${at}.headers[${i}].value`, regexProblem(h.value));
    return { type: h.type, name: h.name.toLowerCase(), value: h.value };
  });
}

export function compileFilters(
  filters: HTTPRouteFilter[],
  at: string,
  unsupported: string[],
  allowRedirect: boolean,
  /** The route's namespace: a filter's backendRef without one is in it. */
  namespace: string,
): { filters: RouteFilter[]; mirrors: CompiledMirror[]; redirect?: RedirectAction } {
  const out: RouteFilter[] = [];
  const mirrors: CompiledMirror[] = [];
  let redirect: RedirectAction | undefined;
  filters.forEach((f, i) => {
    const field = `${at}[${i}]`;
    if (f.type === 'RequestHeaderModifier' && f.requestHeaderModifier !== undefined) {
      const headers = headerModifier(f.requestHeaderModifier);
      checkHeaderModifier(headers, `${field}.requestHeaderModifier`, unsupported);
      out.push({ type: 'RequestHeaderModifier', headers });
    } else if (f.type === 'ResponseHeaderModifier' && f.responseHeaderModifier !== undefined) {
      const headers = headerModifier(f.responseHeaderModifier);
      checkHeaderModifier(headers, `${field}.responseHeaderModifier`, unsupported);
      out.push({ type: 'ResponseHeaderModifier', headers });
    } else if (f.type === 'URLRewrite' && f.urlRewrite !== undefined) {
      const rewrite: RouteFilter = { type: 'URLRewrite' };
      const { hostname, path } = f.urlRewrite;
      if (hostname !== undefined) {
        check(unsupported, `${field}.urlRewrite.hostname`, preciseHostnameProblem(hostname));
        rewrite.hostname = hostname;
      }
      if (path !== undefined) {
        rewrite.path = pathModifier(path);
        checkPathModifier(rewrite.path, `${field}.urlRewrite.path`, unsupported);
      }
      out.push(rewrite);
    } else if (f.type === 'ExternalAuth' && f.externalAuth !== undefined && allowRedirect) {
      const auth = externalAuthorization(f.externalAuth, `${field}.externalAuth`, namespace, unsupported);
      out.push({ type: 'ExternalAuth', auth });
    } else if (f.type === 'CORS' && f.cors !== undefined && allowRedirect) {
      // A route's filter only: the preflight is answered before any backend is chosen.
      out.push({ type: 'CORS', cors: corsPolicy(f.cors, `${field}.cors`, unsupported) });
    } else if (f.type === 'RequestRedirect' && f.requestRedirect !== undefined && allowRedirect) {
      const r = f.requestRedirect;
      redirect = { type: 'Redirect', statusCode: r.statusCode };
      if (r.scheme !== undefined) redirect.scheme = r.scheme;
      if (r.hostname !== undefined) {
        check(unsupported, `${field}.requestRedirect.hostname`, preciseHostnameProblem(r.hostname));
        redirect.hostname = r.hostname;
      }
      if (r.path !== undefined) {
        redirect.path = pathModifier(r.path);
        checkPathModifier(redirect.path, `${field}.requestRedirect.path`, unsupported);
      }
      if (r.port !== undefined) redirect.port = r.port;
    } else if (f.type === 'RequestMirror' && f.requestMirror !== undefined && allowRedirect) {
      mirrors.push({ backendRef: f.requestMirror.backendRef, fraction: mirrorFraction(f.requestMirror) });
    } else {
      unsupported.push(
        `${at}[${i}].type: filter ${f.type} is not supported${allowRedirect ? '' : ' on a backendRef'}`,
      );
    }
  });
  return redirect === undefined ? { filters: out, mirrors } : { filters: out, mirrors, redirect };
}

/** Neither percent nor fraction: every request is mirrored. */
function mirrorFraction(m: RequestMirror): number {
  if (m.percent !== undefined) return m.percent / 100;
  if (m.fraction !== undefined) return Math.min(1, m.fraction.numerator / m.fraction.denominator);
  return 1;
}

/** A `spec.hostnames[i]: …` problem per hostname that is an IP address. */
export function hostnameProblems(hostnames: readonly string[]): string[] {
  const unsupported: string[] = [];
  hostnames.forEach((h, i) => {
    // The CRD's hostname pattern admits dotted numbers; the Gateway API forbids IP addresses.
    if (isIP(h) !== 0) {
      unsupported.push(
        `spec.hostnames[${i}]: '${h}' is an IP address; the Gateway API allows DNS names only`,
      );
    }
  });
  return unsupported;
}

/** The wait before a first retry when `retry.backoff` is not set (implementation-specific by the API). */
export const DEFAULT_RETRY_BACKOFF_MS = 25;
/** Retries per request at most: the API sets no bound, and every retry is one more request to a backend. */
export const MAX_RETRY_ATTEMPTS = 100;

function retryPolicy(
  retry: { codes: number[]; attempts: number; backoff?: string },
  at: string,
  unsupported: string[],
): RetryPolicy {
  if (retry.attempts > MAX_RETRY_ATTEMPTS)
    unsupported.push(`${at}.attempts: at most ${MAX_RETRY_ATTEMPTS} retries per request`);
  const backoffMs = retry.backoff === undefined ? DEFAULT_RETRY_BACKOFF_MS : durationMs(retry.backoff);
  if (backoffMs !== undefined) check(unsupported, `${at}.backoff`, timeoutProblem(backoffMs));
  return {
    codes: [...new Set(retry.codes)].sort((a, b) => a - b),
    attempts: Math.min(retry.attempts, MAX_RETRY_ATTEMPTS),
    backoffMs: backoffMs ?? DEFAULT_RETRY_BACKOFF_MS,
  };
}

export function compileHttpRoute(route: HTTPRoute): CompiledRoute {
  const unsupported = hostnameProblems(route.spec.hostnames);
  const rules = route.spec.rules.map((rule, i): CompiledRule => {
    const at = `spec.rules[${i}]`;
    const matches = rule.matches.map((m, j) => compileMatch(m, `${at}.matches[${j}]`, unsupported));
    const ns = route.metadata.namespace ?? '';
    const { filters, mirrors, redirect } = compileFilters(
      rule.filters,
      `${at}.filters`,
      unsupported,
      true,
      ns,
    );
    const backendFilters = rule.backendRefs.map(
      (b, k) => compileFilters(b.filters, `${at}.backendRefs[${k}].filters`, unsupported, false, ns).filters,
    );
    const request = rule.timeouts?.request;
    const backendRequest = rule.timeouts?.backendRequest;
    for (const [name, text] of [
      ['request', request],
      ['backendRequest', backendRequest],
    ] as const) {
      const ms = text === undefined ? undefined : durationMs(text);
      if (ms !== undefined) check(unsupported, `${at}.timeouts.${name}`, timeoutProblem(ms));
    }
    const out: CompiledRule = {
      index: i,
      matches,
      filters,
      mirrors,
      backendFilters,
      timeoutMs:
        request === undefined ? DEFAULT_ROUTE_TIMEOUT_MS : (durationMs(request) ?? DEFAULT_ROUTE_TIMEOUT_MS),
    };
    if (redirect !== undefined) out.redirect = redirect;
    if (backendRequest !== undefined) {
      const ms = durationMs(backendRequest);
      if (ms !== undefined) out.backendTimeoutMs = ms;
    }
    if (rule.retry !== undefined) out.retry = retryPolicy(rule.retry, `${at}.retry`, unsupported);
    return out;
  });
  return { rules, unsupported };
}

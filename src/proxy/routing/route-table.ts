// Compiles a FleetConfig's virtual hosts and routes into lookup structures: hosts in Maps and suffix lists,
// regexes compiled once (RE2: linear in the input, never backtracking), so a request costs one host lookup and a
// walk over that host's routes.
import { compileRegex } from '../../ir/field-rules.js';
import type {
  FleetConfig,
  HeaderMatch,
  PathMatch,
  QueryParamMatch,
  Route,
  RouteFilter,
  VirtualHost,
  WeightedBackend,
} from '../../ir/fleet-config.js';
import { listenerFilterPolicies } from '../access/listener-filter-policies.js';
import type { CompiledAccessPolicy } from '../access/pipeline.js';
import { normalizePath } from './path-normalization.js';

/** What route matching looks at in a request. */
export interface RequestFacts {
  method: string;
  /** The path before `?`, verbatim. */
  path: string;
  /** The raw query with its `?`, or '' */
  search: string;
  /** The request; header matches read its lines (name, value, ...) as received. */
  message: { readonly rawHeaders: readonly string[] };
  /** The query's parameters, parsed when a query match first needs them. */
  params: URLSearchParams | undefined;
}

type Predicate = (facts: RequestFacts) => boolean;

function queryParams(facts: RequestFacts): URLSearchParams {
  facts.params ??= new URLSearchParams(facts.search);
  return facts.params;
}

export interface CompiledBackend {
  backend: WeightedBackend;
  /** Smooth weighted round-robin state: exact shares, no randomness. */
  current: number;
}

export interface CompiledRoute {
  route: Route;
  matches: Predicate;
  /** Forward only: backends with weight > 0. */
  backends: CompiledBackend[];
  totalWeight: number;
}

export interface CompiledVirtualHost {
  name: string;
  /** The Listener (name) it serves on. */
  listener: string;
  hostname: string;
  routes: CompiledRoute[];
  /** Its listener's policies (names); a route's own of the same kind replace them. */
  policies: readonly string[] | undefined;
  /** Its Gateway listener's pre-routing filters, in order, each a one-step policy; undefined: none. */
  requestFilters: readonly CompiledAccessPolicy[] | undefined;
}

export interface HostTable {
  exact: Map<string, CompiledVirtualHost>;
  /** `*.example.com` stored as `.example.com`, longest first. */
  wildcards: { suffix: string; vhost: CompiledVirtualHost }[];
  any?: CompiledVirtualHost;
}

function pathPredicate(match: PathMatch | undefined): ((path: string) => boolean) | undefined {
  if (match === undefined) return undefined;
  // Requests are matched normalised (path-normalization.ts), so a configured path is compared in that form too.
  const value = match.type === 'RegularExpression' ? match.value : normalizedMatchValue(match.value);
  switch (match.type) {
    case 'Exact':
      return (path) => path === value;
    case 'PathPrefix': {
      if (value === '/') return undefined;
      const base = value.endsWith('/') ? value.slice(0, -1) : value;
      return (path) => path.startsWith(base) && (path.length === base.length || path[base.length] === '/');
    }
    case 'RegularExpression':
      return compileRegex(value);
  }
}

/** A configured Exact or PathPrefix value as requests are matched; one no request can have stays as it is. */
export function normalizedMatchValue(value: string): string {
  return normalizePath(value) ?? value;
}

function valuePredicate(m: HeaderMatch | QueryParamMatch): (value: string | undefined) => boolean {
  if (m.type === 'Exact') return (v) => v === m.value;
  const matches = compileRegex(m.value);
  return (v) => v !== undefined && matches(v);
}

/**
 * The cookie a header match sees: its lines joined with `; `, as RFC 9113 §8.2.3 joins HTTP/2 cookie crumbs (a
 * client may split one cookie header into crumbs anywhere). Undefined when the request has none.
 */
export function joinedCookie(raw: readonly string[]): string | undefined {
  let joined: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length !== 6 || name.toLowerCase() !== 'cookie') continue;
    joined = joined === undefined ? raw[i + 1]! : `${joined}; ${raw[i + 1]!}`;
  }
  return joined;
}

/** Whether any line of the field matches on its own. */
function anyLineMatches(
  raw: readonly string[],
  lowerName: string,
  test: (value: string | undefined) => boolean,
): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === lowerName.length && name.toLowerCase() === lowerName && test(raw[i + 1])) return true;
  }
  return false;
}

/**
 * A header match against a field the request may repeat: each line's value on its own, never the lines joined
 * (a joined string is one no client sent, and a rule on one value must not be dodged by sending two), over
 * HTTP/1.1 and HTTP/2 alike; a line `one, two` is one value. Cookie alone is joined first: HTTP/2 crumbs are
 * pieces of one header, not values.
 */
function headerPredicate(h: HeaderMatch): Predicate {
  const test = valuePredicate(h);
  const name = h.name;
  if (name === 'cookie') return (f) => test(joinedCookie(f.message.rawHeaders));
  return (f) => anyLineMatches(f.message.rawHeaders, name, test);
}

function compileMatch(route: Route): Predicate {
  const { match } = route;
  const checks: Predicate[] = [];
  const path = pathPredicate(match.path);
  if (path !== undefined) checks.push((f) => path(f.path));
  if (match.method !== undefined) {
    const method = match.method;
    checks.push((f) => f.method === method);
  }
  // Gateway API: only the first match entry of a given name counts.
  const seenHeaders = new Set<string>();
  for (const h of match.headers) {
    if (seenHeaders.has(h.name)) continue;
    seenHeaders.add(h.name);
    checks.push(headerPredicate(h));
  }
  const seenParams = new Set<string>();
  for (const q of match.queryParams) {
    if (seenParams.has(q.name)) continue;
    seenParams.add(q.name);
    const test = valuePredicate(q);
    const name = q.name;
    checks.push((f) => test(queryParams(f).get(name) ?? undefined));
  }
  if (checks.length === 0) return () => true;
  if (checks.length === 1) return checks[0]!;
  return (f) => checks.every((c) => c(f));
}

function compileRoute(route: Route): CompiledRoute {
  const backends =
    route.action.type === 'Forward'
      ? route.action.backends.filter((b) => b.weight > 0).map((backend) => ({ backend, current: 0 }))
      : [];
  return {
    route,
    matches: compileMatch(route),
    backends,
    totalWeight: backends.reduce((sum, b) => sum + b.backend.weight, 0),
  };
}

export function compileVirtualHost(vhost: VirtualHost): CompiledVirtualHost {
  return {
    name: vhost.name,
    listener: vhost.listener,
    hostname: vhost.hostname.toLowerCase(),
    routes: vhost.routes.map(compileRoute),
    policies: vhost.policies,
    requestFilters: listenerFilterPolicies(vhost),
  };
}

/** A listener's table of VirtualHosts by hostname, empty: addHost puts each in. */
export function emptyHostTable(): HostTable {
  return { exact: new Map(), wildcards: [] };
}

/**
 * Puts a VirtualHost in its listener's table (in place: every request resolves its host at its start, in one
 * go, so a table changed between requests is never seen half changed). A listener has one per hostname.
 */
export function addHost(table: HostTable, vhost: CompiledVirtualHost): void {
  if (vhost.hostname === '*') table.any = vhost;
  else if (vhost.hostname.startsWith('*.')) {
    const suffix = vhost.hostname.slice(1);
    // Longest suffix first; suffixes of one length cannot both match a host, so their order is free.
    let at = 0;
    while (at < table.wildcards.length && table.wildcards[at]!.suffix.length >= suffix.length) at++;
    table.wildcards.splice(at, 0, { suffix, vhost });
  } else table.exact.set(vhost.hostname, vhost);
}

/** Takes a VirtualHost out of its listener's table, if it is the one there for its hostname. */
export function removeHost(table: HostTable, vhost: CompiledVirtualHost): void {
  if (vhost.hostname === '*') {
    if (table.any === vhost) table.any = undefined;
  } else if (vhost.hostname.startsWith('*.')) {
    const at = table.wildcards.findIndex((w) => w.vhost === vhost);
    if (at !== -1) table.wildcards.splice(at, 1);
  } else if (table.exact.get(vhost.hostname) === vhost) table.exact.delete(vhost.hostname);
}

/**
 * A VirtualHost compiled; `cache` (per proxy) reuses the compiled form of VirtualHost objects seen before, so
 * when the caller keeps unchanged resources' objects across updates, only changes are compiled.
 */
export function compiledVirtualHost(
  v: VirtualHost,
  cache: WeakMap<VirtualHost, CompiledVirtualHost> | undefined,
): CompiledVirtualHost {
  let compiled = cache?.get(v);
  if (compiled === undefined) {
    compiled = compileVirtualHost(v);
    cache?.set(v, compiled);
  }
  return compiled;
}

/** Every virtual host compiled (compiledVirtualHost), by name. */
export function compileVirtualHosts(
  config: FleetConfig,
  cache?: WeakMap<VirtualHost, CompiledVirtualHost>,
): Map<string, CompiledVirtualHost> {
  const out = new Map<string, CompiledVirtualHost>();
  for (const v of config.virtualHosts) out.set(v.name, compiledVirtualHost(v, cache));
  return out;
}

/** The Host header without its port, lower case (`[::1]:80` → `[::1]`). */
export function hostWithoutPort(host: string | undefined): string {
  if (host === undefined) return '';
  // The last colon, unless a `]` follows it (an IPv6 literal without a port).
  let end = host.length;
  for (let i = host.length - 1; i >= 0; i--) {
    const c = host.charCodeAt(i);
    if (c === 93) break;
    if (c === 58) {
      end = i;
      break;
    }
  }
  const name = end === host.length ? host : host.slice(0, end);
  for (let i = 0; i < end; i++) {
    const c = name.charCodeAt(i);
    if ((c >= 65 && c <= 90) || c > 127) return name.toLowerCase();
  }
  return name;
}

export function lookupHost(table: HostTable, host: string): CompiledVirtualHost | undefined {
  const exact = table.exact.get(host);
  if (exact !== undefined) return exact;
  for (const w of table.wildcards) {
    // `*.` covers one or more labels: the host must be longer than the suffix.
    if (host.length > w.suffix.length && host.endsWith(w.suffix)) return w.vhost;
  }
  return table.any;
}

export function findRoute(vhost: CompiledVirtualHost, facts: RequestFacts): CompiledRoute | undefined {
  for (const route of vhost.routes) if (route.matches(facts)) return route;
  return undefined;
}

/** Smooth weighted round-robin (each pick: add weights, take the largest, subtract the total). */
export function pickBackend(route: CompiledRoute): WeightedBackend | undefined {
  let best: CompiledBackend | undefined;
  for (const b of route.backends) {
    b.current += b.backend.weight;
    if (best === undefined || b.current > best.current) best = b;
  }
  if (best === undefined) return undefined;
  best.current -= route.totalWeight;
  return best.backend;
}

/** The filters that apply to a forwarded request: the route's, then the chosen backend's. */
export function filtersFor(route: Route, backend: WeightedBackend | undefined): RouteFilter[] {
  return backend === undefined || backend.filters.length === 0
    ? route.filters
    : [...route.filters, ...backend.filters];
}

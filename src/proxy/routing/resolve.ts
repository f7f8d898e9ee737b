// Decides what to do with a request (local answer, redirect, or forward to an endpoint with which headers),
// shared by plain requests and WebSocket upgrades.
import type {
  CorsPolicy,
  Endpoint,
  ForwardAction,
  HeaderModifier,
  Route,
  RouteFilter,
} from '../../ir/fleet-config.js';
import type { ClientRequest } from '../exchange.js';
import type { LoadBalancing } from '../options.js';
import type { ResponseFlag } from '../telemetry/access-log.js';
import {
  addForwardingHeaders,
  applyHeaderModifier,
  endToEndHeaders,
  type HeaderMap,
} from '../wire/headers.js';
import { corsRequest, corsResponseModifier, isPreflight, preflightHeaders } from './cors.js';
import { normalizePath } from './path-normalization.js';
import { nextRequestId } from './request-id.js';
import { redirectLocation, rewritePath } from './rewrite.js';
import { filtersFor, findRoute, hostWithoutPort, lookupHost, pickBackend } from './route-table.js';
import { type ClusterState, pickEndpoint, type Snapshot } from './snapshot.js';

/** What choosing an endpoint reads of the proxy (its runtime, given from above): how it balances, and its load. */
export interface Balancing {
  readonly options: { readonly loadBalancing: LoadBalancing };
  /** Requests in flight per endpoint key, for least-request balancing. */
  readonly activeByEndpoint: Map<string, number>;
}

export interface ForwardPlan {
  kind: 'forward';
  routeName: string;
  action: ForwardAction;
  cluster: ClusterState;
  /** The cluster's protocol, an HTTP one: the Upstream the request goes through. */
  protocol: 'http' | 'h2c';
  endpoint: Endpoint;
  /** Path and query sent upstream. */
  target: string;
  /** RequestHeaderModifier filters, in order. */
  requestModifiers: HeaderModifier[];
  /** A URLRewrite hostname for the Host header. */
  hostRewrite: string | undefined;
  responseModifiers: HeaderModifier[];
  /** Filters set request headers or the path from configuration: check them before sending. */
  configuredRequest: boolean;
}

/** For a retry on another connection: the next endpoint of the plan's cluster. */
export function nextEndpoint(rt: Balancing, plan: ForwardPlan): Endpoint | undefined {
  return pickEndpoint(plan.cluster, rt.options.loadBalancing, rt.activeByEndpoint);
}

/** What a route without such filters has: one array for all, never added to. */
const NO_MODIFIERS: HeaderModifier[] = [];

const NO_ROUTE: Plan = { kind: 'local', routeName: '-', status: 404, flag: 'no_route' };

/** A path servers read in different ways (path-normalization.ts): matched by no route, sent nowhere. */
const REFUSED_PATH: Plan = { kind: 'local', routeName: '-', status: 400, flag: 'invalid_request' };

export type Plan =
  /** `headers`: lines (name, value, ...) the answer carries (a CORS preflight's). */
  | { kind: 'local'; routeName: string; status: number; flag?: ResponseFlag; headers?: string[] }
  | { kind: 'redirect'; routeName: string; status: number; location: string }
  | ForwardPlan;

export function resolveRequest(
  rt: Balancing,
  snapshot: Snapshot | undefined,
  listenerName: string,
  proto: 'http' | 'https',
  req: ClientRequest,
): Plan {
  const routes = snapshot?.listeners.get(listenerName);
  if (snapshot === undefined || routes === undefined) return NO_ROUTE;
  const host = hostWithoutPort(req.host);
  const vhost = lookupHost(routes.hosts, host);
  if (vhost === undefined) return NO_ROUTE;
  // The parser hands over origin-form only (absolute-form is rewritten there, its authority as Host).
  const url = req.url;
  const q = url.indexOf('?');
  const rawPath = q < 0 ? url : url.slice(0, q);
  const search = q < 0 ? '' : url.slice(q);
  // Matched, rewritten, redirected and forwarded normalised: the backend gets the path that was matched.
  const path = rawPath.charCodeAt(0) === 47 ? normalizePath(rawPath) : rawPath;
  if (path === undefined) return REFUSED_PATH;
  const compiled = findRoute(vhost, { method: req.method, path, search, message: req, params: undefined });
  if (compiled === undefined) return NO_ROUTE;
  const route = compiled.route;
  const cors = corsPolicy(route);
  // A preflight is the route's CORS filter's to answer: it never reaches the backend.
  if (cors !== undefined) {
    const facts = corsRequest(req.rawHeaders);
    if (isPreflight(req.method, facts))
      return { kind: 'local', routeName: route.name, status: 200, headers: preflightHeaders(cors, facts) };
  }
  const action = route.action;
  if (action.type === 'DirectResponse')
    return { kind: 'local', routeName: route.name, status: action.status };
  if (action.type === 'Redirect') {
    const location = redirectLocation(
      action,
      { scheme: proto, host, path, search, listenerPort: routes.listener.port },
      route.match.path,
    );
    return { kind: 'redirect', routeName: route.name, status: action.statusCode, location };
  }
  const backend = pickBackend(compiled);
  if (backend?.cluster === undefined)
    return { kind: 'local', routeName: route.name, status: 500, flag: 'no_backend' };
  const cluster = snapshot.clusters.get(backend.cluster);
  const protocol = cluster?.protocol;
  // A layer-4 cluster relays connections, never HTTP requests (the translator never routes one here).
  if (protocol === 'tcp' || protocol === 'udp')
    return { kind: 'local', routeName: route.name, status: 500, flag: 'no_backend' };
  const endpoint = cluster && pickEndpoint(cluster, rt.options.loadBalancing, rt.activeByEndpoint);
  if (cluster === undefined || protocol === undefined || endpoint === undefined)
    return { kind: 'local', routeName: route.name, status: 503, flag: 'no_healthy_upstream' };

  const plan: ForwardPlan = {
    kind: 'forward',
    routeName: route.name,
    action,
    cluster,
    protocol,
    endpoint,
    target: path === rawPath ? url : path + search,
    requestModifiers: NO_MODIFIERS,
    hostRewrite: undefined,
    responseModifiers: NO_MODIFIERS,
    configuredRequest: false,
  };
  const filters = filtersFor(route, backend);
  if (filters.length > 0) applyFilters(plan, filters, route, path, search, req.rawHeaders);
  return plan;
}

/** The route's CORS filter's policy, if it has one. */
function corsPolicy(route: Route): CorsPolicy | undefined {
  for (const f of route.filters) if (f.type === 'CORS') return f.cors;
  return undefined;
}

/** The route's and backend's filters on the plan: header modifiers in order, a URLRewrite's host and path. */
function applyFilters(
  plan: ForwardPlan,
  filters: readonly RouteFilter[],
  route: Route,
  path: string,
  search: string,
  rawHeaders: readonly string[],
): void {
  let upstreamPath = path;
  const requestModifiers: HeaderModifier[] = [];
  const responseModifiers: HeaderModifier[] = [];
  for (const f of filters) {
    if (f.type === 'RequestHeaderModifier') {
      requestModifiers.push(f.headers);
      plan.configuredRequest = true;
    } else if (f.type === 'ResponseHeaderModifier') responseModifiers.push(f.headers);
    else if (f.type === 'CORS') responseModifiers.push(corsResponseModifier(f.cors, corsRequest(rawHeaders)));
    else {
      plan.configuredRequest = true;
      if (f.hostname !== undefined) plan.hostRewrite = f.hostname;
      if (f.path !== undefined) upstreamPath = rewritePath(upstreamPath, f.path, route.match.path);
    }
  }
  if (upstreamPath !== path) plan.target = upstreamPath + search;
  if (requestModifiers.length > 0) plan.requestModifiers = requestModifiers;
  if (responseModifiers.length > 0) plan.responseModifiers = responseModifiers;
}

/** The request headers toward the upstream as a map, after the request filters (upgrades, filtered routes). */
export function upstreamHeaders(
  req: ClientRequest,
  plan: ForwardPlan,
  proto: 'http' | 'https',
  upgrade: boolean,
  traceparent: string | undefined,
): HeaderMap {
  const headers = endToEndHeaders(req.rawHeaders);
  // One Host upstream even if the client sent several (Node routes on the first).
  if (Array.isArray(headers.host)) headers.host = headers.host[0] ?? '';
  if (upgrade) {
    // The bytes after an upgrade head are the tunnel's, never a body: no framing goes along.
    delete headers['content-length'];
    delete headers['transfer-encoding'];
    headers.connection = 'upgrade';
    headers.upgrade = req.headers.upgrade ?? 'websocket';
  }
  const client = req.client;
  const facts = { clientIp: client.ip, origin: client.origin, proto, timeoutMs: plan.action.timeoutMs };
  addForwardingHeaders(headers, facts, nextRequestId);
  if (traceparent !== undefined) headers.traceparent = traceparent;
  for (const m of plan.requestModifiers) applyHeaderModifier(headers, m);
  if (plan.hostRewrite !== undefined) headers.host = plan.hostRewrite;
  return headers;
}

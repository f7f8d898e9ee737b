// Decides what to do with a request (local answer, redirect, or forward to an endpoint with which headers),
// shared by plain requests and WebSocket upgrades.
import type { ExternalAuthorization } from '../../ir/external-auth.js';
import type {
  CorsPolicy,
  Endpoint,
  ForwardAction,
  HeaderModifier,
  Route,
  RouteFilter,
} from '../../ir/fleet-config.js';
import { externalAuthStep } from '../access/external-steps.js';
import type { CompiledAccessPolicy } from '../access/pipeline.js';
import { type AccessRequest, accessRequest } from '../access/request-view.js';
import type { AuthorizationReach, Authorizers } from '../access/step.js';
import type { ClientRequest } from '../exchange.js';
import type { LoadBalancing } from '../options.js';
import type { ResponseFlag } from '../telemetry/access-log.js';
import { EXTERNAL_AUTH_POLICY_PREFIX } from '../telemetry/metrics.js';
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
import {
  type CompiledRoute,
  filtersFor,
  findRoute,
  hostWithoutPort,
  lookupHost,
  pickBackend,
} from './route-table.js';
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
  /** The matched route (its rate limits and body limit). */
  route: Route;
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
  /** Copies to send (RequestMirror filters whose share drew this request, with an endpoint); undefined: none. */
  mirrors: ForwardPlan[] | undefined;
  /** Header lines (name, value, ...) an access check adds to the client's response (a session cookie). */
  responseLines?: string[];
}

/** For a retry: the next endpoint of the plan's cluster, another than `failed` where the cluster has one. */
export function nextEndpoint(rt: Balancing, plan: ForwardPlan, failed: Endpoint): Endpoint | undefined {
  return pickEndpoint(plan.cluster, rt.options.loadBalancing, rt.activeByEndpoint, failed);
}

/** What a route without such filters has: one array for all, never added to. */
const NO_MODIFIERS: HeaderModifier[] = [];

const NO_ROUTE: Plan = { kind: 'local', routeName: '-', status: 404, flag: 'no_route' };

/** A path servers read in different ways (path-normalization.ts): matched by no route, sent nowhere. */
const REFUSED_PATH: Plan = { kind: 'local', routeName: '-', status: 400, flag: 'invalid_request' };

/** The policies a matched route's request must pass before its action, and the request as they see it. */
export interface AccessPlan {
  policies: readonly CompiledAccessPolicy[];
  request: AccessRequest;
  /** How steps reach authorization services (through the snapshot the request resolved with). */
  reach: AuthorizationReach;
}

export type Plan =
  /** `headers`: lines (name, value, ...) the answer carries (a CORS preflight's). */
  (
    | {
        kind: 'local';
        routeName: string;
        route?: Route;
        status: number;
        flag?: ResponseFlag;
        headers?: string[];
      }
    | { kind: 'redirect'; routeName: string; route: Route; status: number; location: string }
    | ForwardPlan
  ) & { access?: AccessPlan };

/** A policy a route names and the proxy does not have (refused by its validation): everything is refused. */
function missingPolicy(name: string): CompiledAccessPolicy {
  const refusal = {
    allow: false,
    status: 403,
    rule: 'missing-policy',
    reason: `policy ${name} is not applied`,
  } as const;
  return { name, steps: [{ check: () => refusal }], credentialQuery: [] };
}

/** `AccessPolicy ns/name` → `AccessPolicy` */
function policyKind(name: string): string {
  return name.slice(0, name.indexOf(' '));
}

/** The route's policies, and its listener's of the kinds the route has none of. */
function effectivePolicies(
  own: readonly string[] | undefined,
  inherited: readonly string[] | undefined,
): readonly string[] | undefined {
  if (inherited === undefined) return own;
  if (own === undefined) return inherited;
  const kinds = new Set(own.map(policyKind));
  return [...own, ...inherited.filter((n) => !kinds.has(policyKind(n)))];
}

export function resolveRequest(
  rt: Balancing & { readonly authorizers: Authorizers },
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
      return {
        kind: 'local',
        routeName: route.name,
        route,
        status: 200,
        headers: preflightHeaders(cors, facts),
      };
  }
  const names = effectivePolicies(route.policies, vhost.policies);
  const matched = { compiled, host, path, rawPath, search, listenerPort: routes.listener.port };
  const planned = resolveAction(rt, snapshot, matched, req, proto);
  const auth = externalAuthOf(route);
  if (names !== undefined || auth !== undefined) {
    const policies = (names ?? []).map((n) => snapshot.policies.get(n) ?? missingPolicy(n));
    // The route's ExternalAuth filter runs after the policies: its service is asked only about requests they let by.
    if (auth !== undefined) policies.push(externalAuthPolicy(auth, route.name));
    planned.access = {
      policies,
      request: accessRequest(req, path, search, proto === 'https'),
      reach: authorizationReach(rt, snapshot),
    };
  }
  return planned;
}

/** Authorization services as this request's steps reach them: through this snapshot's clusters. */
export function authorizationReach(
  rt: Balancing & { readonly authorizers: Authorizers },
  snapshot: Snapshot,
): AuthorizationReach {
  return {
    authorizers: rt.authorizers,
    endpointOf: (cluster) => {
      const state = snapshot.clusters.get(cluster);
      return state && pickEndpoint(state, rt.options.loadBalancing, rt.activeByEndpoint);
    },
  };
}

/** The route's ExternalAuth filter's settings, if it has one. */
function externalAuthOf(route: Route): ExternalAuthorization | undefined {
  for (const f of route.filters) if (f.type === 'ExternalAuth') return f.auth;
  return undefined;
}

/** A route's ExternalAuth filter as a one-step policy (named for the route: a metrics label). */
function externalAuthPolicy(auth: ExternalAuthorization, routeName: string): CompiledAccessPolicy {
  return {
    name: `${EXTERNAL_AUTH_POLICY_PREFIX}${routeName}`,
    steps: [externalAuthStep(auth)],
    credentialQuery: [],
  };
}

/** A request's matched route and what matching read of the request. */
interface Matched {
  compiled: CompiledRoute;
  /** Without its port. */
  host: string;
  /** Normalised. */
  path: string;
  rawPath: string;
  search: string;
  listenerPort: number;
}

/** What a matched route's action makes of the request. */
function resolveAction(
  rt: Balancing,
  snapshot: Snapshot,
  matched: Matched,
  req: ClientRequest,
  proto: 'http' | 'https',
): Plan {
  const { compiled, host, path, rawPath, search, listenerPort } = matched;
  const route = compiled.route;
  const url = req.url;
  const action = route.action;
  if (action.type === 'DirectResponse')
    return { kind: 'local', routeName: route.name, route, status: action.status };
  if (action.type === 'Redirect') {
    const location = redirectLocation(
      action,
      { scheme: proto, host, path, search, listenerPort },
      route.match.path,
    );
    return { kind: 'redirect', routeName: route.name, route, status: action.statusCode, location };
  }
  const backend = pickBackend(compiled);
  if (backend?.cluster === undefined)
    return { kind: 'local', routeName: route.name, route, status: 500, flag: 'no_backend' };
  const cluster = snapshot.clusters.get(backend.cluster);
  const protocol = cluster?.protocol;
  // A layer-4 cluster relays connections, never HTTP requests (the translator never routes one here).
  if (protocol === 'tcp' || protocol === 'udp')
    return { kind: 'local', routeName: route.name, status: 500, flag: 'no_backend' };
  const endpoint = cluster && pickEndpoint(cluster, rt.options.loadBalancing, rt.activeByEndpoint);
  if (cluster === undefined || protocol === undefined || endpoint === undefined)
    return { kind: 'local', routeName: route.name, route, status: 503, flag: 'no_healthy_upstream' };

  const target = path === rawPath ? url : path + search;
  const plan: ForwardPlan = {
    kind: 'forward',
    routeName: route.name,
    route,
    action,
    cluster,
    protocol,
    endpoint,
    target,
    requestModifiers: NO_MODIFIERS,
    hostRewrite: undefined,
    responseModifiers: NO_MODIFIERS,
    configuredRequest: false,
    mirrors: undefined,
  };
  const filters = filtersFor(route, backend);
  if (filters.length > 0) applyFilters(plan, filters, route, path, search, req.rawHeaders);
  if (action.mirrors !== undefined)
    plan.mirrors = mirrorPlans(rt, snapshot, plan, route, { target, path, search });
  return plan;
}

/**
 * The copies this request sends: one per RequestMirror its share drew (`Math.random`, so a share holds over many
 * requests), to one endpoint of the mirror's cluster, with the route's filters only (not its backend's).
 */
function mirrorPlans(
  rt: Balancing,
  snapshot: Snapshot,
  plan: ForwardPlan,
  route: Route,
  request: { target: string; path: string; search: string },
): ForwardPlan[] | undefined {
  let out: ForwardPlan[] | undefined;
  for (const m of plan.action.mirrors!) {
    if (m.fraction < 1 && Math.random() >= m.fraction) continue;
    const cluster = snapshot.clusters.get(m.cluster);
    const protocol = cluster?.protocol;
    // A mirror of a layer-4 cluster cannot take an HTTP request (the translator never names one).
    if (cluster === undefined || (protocol !== 'http' && protocol !== 'h2c')) continue;
    const endpoint = pickEndpoint(cluster, rt.options.loadBalancing, rt.activeByEndpoint);
    if (endpoint === undefined) continue;
    const mirror: ForwardPlan = {
      ...plan,
      cluster,
      protocol,
      endpoint,
      target: request.target,
      requestModifiers: NO_MODIFIERS,
      hostRewrite: undefined,
      responseModifiers: NO_MODIFIERS,
      configuredRequest: false,
      mirrors: undefined,
    };
    if (route.filters.length > 0)
      applyFilters(mirror, route.filters, route, request.path, request.search, NO_HEADERS);
    if (out === undefined) out = [mirror];
    else out.push(mirror);
  }
  return out;
}

/** A mirror's answer is never read: no CORS request facts are needed to build its filters. */
const NO_HEADERS: readonly string[] = [];

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
    // ExternalAuth joins the access plan (resolveRequest).
    else if (f.type === 'ExternalAuth') continue;
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
  const facts = { clientIp: client.peerIp, origin: client.origin, proto, timeoutMs: plan.action.timeoutMs };
  addForwardingHeaders(headers, facts, client.trustedChain, nextRequestId);
  if (traceparent !== undefined) headers.traceparent = traceparent;
  for (const m of plan.requestModifiers) applyHeaderModifier(headers, m);
  if (plan.hostRewrite !== undefined) headers.host = plan.hostRewrite;
  return headers;
}

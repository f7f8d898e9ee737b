// Decides what to do with a request (local answer, redirect, or forward to an endpoint with which headers),
// shared by plain requests and WebSocket upgrades.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Endpoint, ForwardAction, HeaderModifier } from '../ir/fleet-config.js';
import {
  addForwardingHeaders,
  applyHeaderModifier,
  clientIp,
  endToEndHeaders,
  type HeaderMap,
} from './headers.js';
import { redirectLocation, rewritePath } from './rewrite.js';
import { filtersFor, findRoute, hostWithoutPort, lookupHost, pickBackend } from './routing.js';
import type { ProxyRuntime } from './runtime.js';
import { type ClusterState, pickEndpoint, type Snapshot } from './snapshot.js';

export interface ForwardPlan {
  kind: 'forward';
  routeName: string;
  action: ForwardAction;
  cluster: ClusterState;
  endpoint: Endpoint;
  /** Path and query sent upstream. */
  target: string;
  headers: HeaderMap;
  responseModifiers: HeaderModifier[];
  /** For a retry on another connection: picks the next endpoint of the same cluster. */
  nextEndpoint: () => Endpoint | undefined;
}

export type Plan =
  | { kind: 'local'; routeName: string; status: number }
  | { kind: 'redirect'; routeName: string; status: number; location: string }
  | ForwardPlan;

function splitTarget(url: string): { path: string; search: string } {
  let target = url;
  // absolute-form (`GET http://host/p`): route on its path.
  if (!target.startsWith('/') && /^https?:\/\//i.test(target)) {
    const slash = target.indexOf('/', target.indexOf('//') + 2);
    target = slash === -1 ? '/' : target.slice(slash);
  }
  const q = target.indexOf('?');
  return q === -1 ? { path: target, search: '' } : { path: target.slice(0, q), search: target.slice(q) };
}

export function resolveRequest(
  rt: ProxyRuntime,
  snapshot: Snapshot | undefined,
  listenerName: string,
  proto: 'http' | 'https',
  req: IncomingMessage,
  upgrade: boolean,
): Plan {
  const routes = snapshot?.listeners.get(listenerName);
  if (snapshot === undefined || routes === undefined) return { kind: 'local', routeName: '-', status: 404 };
  const host = hostWithoutPort(req.headers.host);
  const vhost = lookupHost(routes.hosts, host);
  if (vhost === undefined) return { kind: 'local', routeName: '-', status: 404 };
  const { path, search } = splitTarget(req.url ?? '/');
  const method = req.method ?? 'GET';
  const compiled = findRoute(vhost, { method, path, query: search.slice(1), headers: req.headers });
  if (compiled === undefined) return { kind: 'local', routeName: '-', status: 404 };
  const route = compiled.route;
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
  if (backend?.cluster === undefined) return { kind: 'local', routeName: route.name, status: 500 };
  const cluster = snapshot.clusters.get(backend.cluster);
  const mode = rt.options.loadBalancing;
  const endpoint = cluster && pickEndpoint(cluster, mode, rt.activeByEndpoint);
  if (cluster === undefined || endpoint === undefined)
    return { kind: 'local', routeName: route.name, status: 503 };

  const headers = endToEndHeaders(req.rawHeaders);
  // One Host upstream even if the client sent several (Node routes on the first).
  if (Array.isArray(headers.host)) headers.host = headers.host[0] ?? '';
  if (upgrade) {
    headers.connection = 'upgrade';
    headers.upgrade = req.headers.upgrade ?? 'websocket';
  }
  addForwardingHeaders(headers, clientIp(req.socket.remoteAddress), proto, randomUUID, action.timeoutMs);
  let upstreamPath = path;
  const responseModifiers: HeaderModifier[] = [];
  for (const f of filtersFor(route, backend)) {
    if (f.type === 'RequestHeaderModifier') applyHeaderModifier(headers, f.headers);
    else if (f.type === 'ResponseHeaderModifier') responseModifiers.push(f.headers);
    else {
      if (f.hostname !== undefined) headers.host = f.hostname;
      if (f.path !== undefined) upstreamPath = rewritePath(upstreamPath, f.path, route.match.path);
    }
  }
  return {
    kind: 'forward',
    routeName: route.name,
    action,
    cluster,
    endpoint,
    target: upstreamPath + search,
    headers,
    responseModifiers,
    nextEndpoint: () => pickEndpoint(cluster, mode, rt.activeByEndpoint),
  };
}

// The route kinds Portico serves. HTTPRoute and GRPCRoute on HTTP and HTTPS listeners; TLSRoute, TCPRoute and
// UDPRoute on TLS, TCP and UDP listeners. All share attachment, hostnames, backends and status; only their
// rules differ (a layer-4 route has one rule of backends and no matches).
import type { GRPCRoute } from './grpc-route.js';
import type { HTTPRoute } from './http-route.js';
import type { Layer4Route } from './layer4-routes.js';

export type RouteObject = HTTPRoute | GRPCRoute | Layer4Route;
export type RouteKind = RouteObject['kind'];

/** In the order listeners list them in supportedKinds. */
export const ROUTE_KINDS: readonly RouteKind[] = [
  'HTTPRoute',
  'GRPCRoute',
  'TLSRoute',
  'TCPRoute',
  'UDPRoute',
];

export function isRouteKind(kind: string): kind is RouteKind {
  return (ROUTE_KINDS as readonly string[]).includes(kind);
}

const KINDS_BY_PROTOCOL: Readonly<Record<string, readonly RouteKind[]>> = {
  HTTP: ['HTTPRoute', 'GRPCRoute'],
  HTTPS: ['HTTPRoute', 'GRPCRoute'],
  TLS: ['TLSRoute'],
  TCP: ['TCPRoute'],
  UDP: ['UDPRoute'],
};

/** The route kinds a listener of this protocol may take; undefined for a protocol Portico does not serve. */
export function kindsOfProtocol(protocol: string): readonly RouteKind[] | undefined {
  return Object.hasOwn(KINDS_BY_PROTOCOL, protocol) ? KINDS_BY_PROTOCOL[protocol] : undefined;
}

export function isLayer4Route(route: RouteObject): route is Layer4Route {
  return route.kind === 'TLSRoute' || route.kind === 'TCPRoute' || route.kind === 'UDPRoute';
}

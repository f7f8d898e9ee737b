// The route kinds Portico serves on HTTP and HTTPS listeners: HTTPRoute and GRPCRoute share attachment,
// hostnames, backends and status; only their rules differ.
import type { GRPCRoute } from './grpc-route.js';
import type { HTTPRoute } from './http-route.js';

export type RouteObject = HTTPRoute | GRPCRoute;
export type RouteKind = RouteObject['kind'];

/** In the order listeners list them in supportedKinds. */
export const ROUTE_KINDS: readonly RouteKind[] = ['HTTPRoute', 'GRPCRoute'];

export function isRouteKind(kind: string): kind is RouteKind {
  return (ROUTE_KINDS as readonly string[]).includes(kind);
}

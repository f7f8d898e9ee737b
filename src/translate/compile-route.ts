// A route's rules in fleet-config terms, by kind: a pure function of the route alone, memoised on the object
// (in the caller's memo).
import { isLayer4Route, type RouteObject } from '../api/route-kinds.js';
import { compileGrpcRoute } from './grpc-route-rules.js';
import { compileLayer4Route } from './layer4-route-rules.js';
import { type CompiledRoute, compileHttpRoute } from './route-rules.js';

export function compileRoute(
  route: RouteObject,
  compiled: WeakMap<RouteObject, CompiledRoute>,
): CompiledRoute {
  const hit = compiled.get(route);
  if (hit !== undefined) return hit;
  const result = isLayer4Route(route)
    ? compileLayer4Route(route)
    : route.kind === 'GRPCRoute'
      ? compileGrpcRoute(route)
      : compileHttpRoute(route);
  compiled.set(route, result);
  return result;
}

// A route's rules in fleet-config terms, by kind: a pure function of the route alone, memoised on the object.
import type { RouteObject } from '../api/route-kinds.js';
import { compileGrpcRoute } from './grpc-route-rules.js';
import { type CompiledRoute, compileHttpRoute } from './route-rules.js';

const compiled = new WeakMap<RouteObject, CompiledRoute>();

export function compileRoute(route: RouteObject): CompiledRoute {
  const hit = compiled.get(route);
  if (hit !== undefined) return hit;
  const result = route.kind === 'GRPCRoute' ? compileGrpcRoute(route) : compileHttpRoute(route);
  compiled.set(route, result);
  return result;
}

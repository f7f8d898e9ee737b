// An HTTPRoute and a GRPCRoute attached to one listener with a hostname in common: the Gateway API accepts
// exactly one of them there, the older (then by namespace/name). The other leaves that listener, and a parent
// none of whose listeners keeps it is not Accepted.
import type { RouteObject } from '../api/route-kinds.js';
import { condition } from './conditions.js';
import { effectiveHostnames, intersectHostnames } from './hostnames.js';
import type { ListenerState } from './listeners.js';
import { compareRouteAge } from './precedence.js';
import type { GatewayEntry, RouteState } from './routes.js';

function overlap(a: readonly string[], b: readonly string[]): boolean {
  return a.some((x) => b.some((y) => x === '*' || y === '*' || intersectHostnames(x, y) !== undefined));
}

function hasBothKinds(routes: readonly RouteObject[]): boolean {
  const first = routes[0]?.kind;
  return routes.some((r) => r.kind !== first);
}

/** Takes the losers off `l.attached`; returns why each lost, by route. */
function resolveListener(gatewayKey: string, l: ListenerState): Map<RouteObject, string> {
  const lost = new Map<RouteObject, string>();
  const kept: { route: RouteObject; hostnames: string[] }[] = [];
  for (const route of [...l.attached].sort(compareRouteAge)) {
    const hostnames = effectiveHostnames(l.spec.hostname, route.spec.hostnames);
    const winner = kept.find((k) => k.route.kind !== route.kind && overlap(k.hostnames, hostnames));
    if (winner === undefined) {
      kept.push({ route, hostnames });
      continue;
    }
    const { namespace, name } = winner.route.metadata;
    lost.set(
      route,
      `listener ${l.spec.name} of Gateway ${gatewayKey} serves ${winner.route.kind} ${namespace}/${name}, older, for a hostname of this route`,
    );
  }
  if (lost.size > 0) l.attached = l.attached.filter((r) => !lost.has(r));
  return lost;
}

function withLosses(rs: RouteState, lost: Map<string, string>): RouteState {
  const key = (a: { gatewayKey: string; index: number }) => `${a.gatewayKey}|${a.index}`;
  const generation = rs.route.metadata.generation;
  const parents = rs.parents.map((p, i) => {
    const through = rs.attachedTo.filter((a) => a.parent === i);
    if (through.length === 0 || !through.every((a) => lost.has(key(a)))) return p;
    const message = lost.get(key(through[0]!))!;
    const conditions = p.conditions.map((c) =>
      c.type === 'Accepted' ? condition('Accepted', false, 'NotAllowedByListeners', message, generation) : c,
    );
    return { ...p, conditions };
  });
  return { ...rs, parents, attachedTo: rs.attachedTo.filter((a) => !lost.has(key(a))) };
}

/** The route states after the kind conflicts of every listener; the same array when there are none. */
export function resolveKindConflicts(
  gateways: Map<string, GatewayEntry>,
  states: RouteState[],
): RouteState[] {
  const losses = new Map<RouteObject, Map<string, string>>();
  for (const gw of gateways.values()) {
    for (const l of gw.listeners) {
      if (!hasBothKinds(l.attached)) continue;
      for (const [route, why] of resolveListener(gw.key, l)) {
        const perListener = losses.get(route) ?? new Map<string, string>();
        perListener.set(`${gw.key}|${l.index}`, why);
        losses.set(route, perListener);
      }
    }
  }
  if (losses.size === 0) return states;
  return states.map((rs) => {
    const lost = losses.get(rs.route);
    return lost === undefined ? rs : withLosses(rs, lost);
  });
}

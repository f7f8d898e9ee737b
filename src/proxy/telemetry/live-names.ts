// The names the applied config holds (listeners, routes, clusters, rate-limit rules, policies), which metrics keep series for. A config that
// changed a few VirtualHosts updates the route names by those, not by walking every route of thousands again.
import type { FleetConfig, Route } from '../../ir/fleet-config.js';
import { type FleetConfigChange, findByName } from '../../ir/fleet-config-patch.js';
import type { LiveNames } from './metrics.js';

export interface LiveNamesTracker {
  /** The config now applied; `change`: how it came from the one before (absent: they are read afresh, lazily). */
  update(config: FleetConfig, change?: FleetConfigChange): void;
  /** The names, made when first asked for after a config that came without a change. */
  names(): LiveNames;
}

type Counts = Map<string, number>;

function countName(counts: Counts, name: string, by: number): void {
  const n = (counts.get(name) ?? 0) + by;
  if (n <= 0) counts.delete(name);
  else counts.set(name, n);
}

/** Routes and their rate-limit rules, counted by holder (a VirtualHost's route, a route's rule). */
interface RouteCounts {
  routes: Counts;
  rules: Counts;
}

function count(counts: RouteCounts, routes: readonly Route[], by: number): void {
  for (const r of routes) {
    countName(counts.routes, r.name, by);
    for (const rule of r.rateLimits ?? []) countName(counts.rules, rule.name, by);
  }
}

export function createLiveNames(): LiveNamesTracker {
  let config: FleetConfig | undefined;
  // Route name → how many VirtualHosts have it (a route with several hostnames is in several), and rate-limit rule
  // name → how many routes have it; undefined: not made.
  let routes: RouteCounts | undefined;
  let small:
    | {
        listeners: object;
        clusters: object;
        policies: object;
        names: Omit<LiveNames, 'routes' | 'rateLimitRules'>;
      }
    | undefined;
  return {
    update(next, change) {
      if (
        routes !== undefined &&
        config !== undefined &&
        change?.since === config &&
        change.config === next
      ) {
        for (const { type, name } of [...change.changed, ...change.removed]) {
          if (type !== 'virtualHosts') continue;
          const before = findByName(config.virtualHosts, name);
          if (before !== undefined) count(routes, before.routes, -1);
        }
        for (const { type, name } of change.changed) {
          const after = type === 'virtualHosts' ? findByName(next.virtualHosts, name) : undefined;
          if (after !== undefined) count(routes, after.routes, 1);
        }
      } else routes = undefined;
      config = next;
    },
    names() {
      const c = config;
      if (c === undefined)
        return {
          listeners: new Set(),
          routes: new Set(),
          clusters: new Set(),
          rateLimitRules: new Set(),
          policies: new Set(),
        };
      if (routes === undefined) {
        routes = { routes: new Map(), rules: new Map() };
        for (const v of c.virtualHosts) count(routes, v.routes, 1);
      }
      // Listeners, clusters and policies are few (or change seldom): their sets follow their lists.
      if (
        small?.listeners !== c.listeners ||
        small.clusters !== c.clusters ||
        small.policies !== c.policies
      ) {
        const names = {
          listeners: new Set(c.listeners.map((l) => l.name)),
          clusters: new Set(c.clusters.map((cl) => cl.name)),
          policies: new Set(c.policies.map((p) => p.name)),
        };
        small = { listeners: c.listeners, clusters: c.clusters, policies: c.policies, names };
      }
      return { ...small.names, routes: routes.routes, rateLimitRules: routes.rules };
    },
  };
}

// One fleet's FleetConfig from its Gateways' ready listeners and attached routes (src/ir/fleet-config.ts).
import type { HTTPRoute } from '../api/http-route.js';
import {
  type Cluster,
  type ClusterEndpoints,
  FLEET_CONFIG_SCHEMA_VERSION,
  type FleetConfig,
  type Listener,
  type RouteAction,
  type TlsCertificateChoice,
  type TlsSecret,
  type VirtualHost,
} from '../ir/fleet-config.js';
import type { ClusterTable } from './backends.js';
import { compareSpecificity, covers, effectiveHostnames, isWildcard, listenerServes } from './hostnames.js';
import { type ListenerState, ready } from './listeners.js';
import type { SnapshotLookup } from './lookup.js';
import { comparePrecedence, type RankedRoute } from './precedence.js';
import type { GatewayEntry, RouteState } from './routes.js';
import { tlsSecretPems } from './secrets.js';
import type { TranslateCache } from './types.js';

export interface FleetInput {
  key: string;
  /** The fleet's Gateways, oldest first. */
  gateways: GatewayEntry[];
  routes: Map<HTTPRoute, RouteState>;
  clusters: ClusterTable;
  lookup: SnapshotLookup;
}

function byName<T extends { name: string }>(a: T, b: T): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function ruleActions(rs: RouteState): RouteAction[] {
  return rs.compiled.rules.map((rule): RouteAction => {
    if (rule.redirect !== undefined) return rule.redirect;
    const resolved = rs.backends.rules[rule.index] ?? [];
    // No backendRefs, or every weight 0: nothing may ever be picked, so the rule answers 500.
    if (resolved.length === 0 || resolved.every((b) => b.weight === 0))
      return { type: 'DirectResponse', status: 500 };
    const action: RouteAction = {
      type: 'Forward',
      backends: resolved.map((b, k) => {
        const wb: { weight: number; cluster?: string; filters: typeof rule.filters } = {
          weight: b.weight,
          filters: rule.backendFilters[k] ?? [],
        };
        if (b.cluster !== undefined) wb.cluster = b.cluster;
        return wb;
      }),
      timeoutMs: rule.timeoutMs,
    };
    if (rule.backendTimeoutMs !== undefined) action.backendTimeoutMs = rule.backendTimeoutMs;
    return action;
  });
}

function rankedRoutes(rs: RouteState): RankedRoute[] {
  const actions = ruleActions(rs);
  const ns = rs.route.metadata.namespace ?? '';
  const name = rs.route.metadata.name;
  const out: RankedRoute[] = [];
  for (const rule of rs.compiled.rules) {
    rule.matches.forEach((match, j) => {
      out.push({
        route: {
          name: `${ns}/${name}/rule/${rule.index}/match/${j}`,
          routeRef: { namespace: ns, name, rule: rule.index },
          match,
          filters: rule.filters,
          action: actions[rule.index]!,
        },
        source: rs.route,
        rule: rule.index,
        match: j,
      });
    });
  }
  return out;
}

// An unchanged HTTPRoute (same object, same resolved backends) keeps its Route objects, so an unchanged
// VirtualHost is the previous object again and discovery re-sends only what an edit changed.
const rankedMemo = new WeakMap<HTTPRoute, { backends: RouteState['backends']; ranked: RankedRoute[] }>();

function rankedRoutesOf(rs: RouteState): RankedRoute[] {
  const hit = rankedMemo.get(rs.route);
  if (hit !== undefined && hit.backends === rs.backends) return hit.ranked;
  const ranked = rankedRoutes(rs);
  rankedMemo.set(rs.route, { backends: rs.backends, ranked });
  return ranked;
}

/** Identity of everything a fleet config is derived from; equal deps → the cached config is still right. */
function fleetDeps(input: FleetInput, listeners: ListenerState[]): unknown[] {
  const deps: unknown[] = [input.key];
  for (const g of input.gateways) deps.push(g.gateway);
  for (const l of listeners) {
    deps.push(`${l.gatewayKey}|${l.index}|${l.certificates.join(',')}`);
    for (const c of l.certificates) deps.push(input.lookup.secrets.get(c));
    for (const r of l.attached) {
      deps.push(r);
      const rs = input.routes.get(r);
      for (const rule of rs?.backends.rules ?? []) {
        for (const b of rule) {
          // ResolvedCluster objects keep their identity while their Service and slices do.
          deps.push(b.cluster === undefined ? '-' : input.clusters.get(b.cluster));
        }
      }
    }
  }
  return deps;
}

function sameDeps(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function buildFleet(input: FleetInput, cache?: TranslateCache): FleetConfig {
  const listeners = input.gateways.flatMap((g) => g.listeners.filter(ready));
  const deps = cache === undefined ? [] : fleetDeps(input, listeners);
  const hit = cache?.fleets.get(input.key);
  if (hit !== undefined && sameDeps(hit.deps, deps)) return hit.config;
  const config = buildFleetUncached(input, listeners, hit?.config);
  cache?.fleets.set(input.key, { deps, config });
  return config;
}

function buildFleetUncached(
  input: FleetInput,
  listeners: ListenerState[],
  previous: FleetConfig | undefined,
): FleetConfig {
  const previousHosts = new Map(previous?.virtualHosts.map((v) => [v.name, v]));
  const byPort = new Map<number, ListenerState[]>();
  for (const l of listeners) {
    const list = byPort.get(l.spec.port);
    if (list === undefined) byPort.set(l.spec.port, [l]);
    else list.push(l);
  }
  const fleetListeners: Listener[] = [];
  const virtualHosts: VirtualHost[] = [];
  const usedClusters = new Set<string>();
  const usedSecrets = new Set<string>();
  for (const [port, onPort] of byPort) {
    // For each vhost hostname: the listener that receives its requests (the most specific one serving it).
    const ownerOf = (h: string): ListenerState | undefined => {
      let best: ListenerState | undefined;
      for (const l of onPort) {
        if (!listenerServes(l.spec.hostname, h)) continue;
        if (best === undefined || compareSpecificity(l.spec.hostname, best.spec.hostname) < 0) best = l;
      }
      return best;
    };
    // Every listener hostname gets its VirtualHost, even empty, so its requests never fall to a wider one.
    const hosts = new Map<
      string,
      { hostname: string; owner: ListenerState; routes: Set<HTTPRoute>; ranked: RankedRoute[] }
    >();
    const effective = new Map<ListenerState, { route: RouteState; hostnames: string[] }[]>();
    const addHost = (h: string) => {
      if (hosts.has(h)) return;
      const owner = ownerOf(h);
      if (owner !== undefined) hosts.set(h, { hostname: h, owner, routes: new Set(), ranked: [] });
    };
    for (const l of onPort) {
      addHost(l.spec.hostname ?? '*');
      const list: { route: RouteState; hostnames: string[] }[] = [];
      for (const route of l.attached) {
        const rs = input.routes.get(route);
        if (rs === undefined) continue;
        const hostnames = effectiveHostnames(l.spec.hostname, route.spec.hostnames);
        for (const h of hostnames) addHost(h);
        list.push({ route: rs, hostnames });
      }
      effective.set(l, list);
    }
    // A route serves every VirtualHost of its listener that one of its hostnames covers: requests for
    // foo.example.com pick that VirtualHost only, so routes for *.example.com must be there too.
    const allHosts = [...hosts.values()];
    for (const l of onPort) {
      for (const { route: rs, hostnames } of effective.get(l) ?? []) {
        for (const e of hostnames) {
          const exact = e === '*' || isWildcard(e) ? undefined : hosts.get(e);
          const targets =
            exact !== undefined
              ? exact.owner === l
                ? [exact]
                : []
              : e === '*' || isWildcard(e)
                ? allHosts.filter(
                    (v) => v.owner === l && (e === '*' || e === v.hostname || covers(e, v.hostname)),
                  )
                : [];
          for (const entry of targets) {
            if (entry.routes.has(rs.route)) continue;
            entry.routes.add(rs.route);
            entry.ranked.push(...rankedRoutesOf(rs));
            for (const rule of rs.backends.rules) {
              for (const b of rule) if (b.cluster !== undefined) usedClusters.add(b.cluster);
            }
          }
        }
      }
    }
    const names: { hostname: string; name: string }[] = [];
    for (const [hostname, entry] of hosts) {
      entry.ranked.sort(comparePrecedence);
      const name = `port-${port}/${hostname}`;
      const routes = entry.ranked.map((r) => r.route);
      const before = previousHosts.get(name);
      virtualHosts.push(
        before !== undefined && before.hostname === hostname && sameDeps(before.routes, routes)
          ? before
          : { name, hostname, routes },
      );
      names.push({ hostname, name });
    }
    names.sort((a, b) => compareSpecificity(a.hostname, b.hostname));
    const first = onPort[0]!;
    const listener: Listener = {
      name: `port-${port}`,
      port,
      protocol: first.spec.protocol === 'HTTPS' ? 'HTTPS' : 'HTTP',
      gatewayListeners: onPort
        .map((l) => ({ gateway: l.gatewayKey, listener: l.spec.name }))
        .sort((a, b) =>
          a.gateway !== b.gateway
            ? a.gateway < b.gateway
              ? -1
              : 1
            : a.listener < b.listener
              ? -1
              : a.listener > b.listener
                ? 1
                : 0,
        ),
      virtualHosts: names.map((n) => n.name),
    };
    if (listener.protocol === 'HTTPS') {
      const certificates: TlsCertificateChoice[] = onPort
        .slice()
        .sort((a, b) => compareSpecificity(a.spec.hostname, b.spec.hostname))
        .map((l) => ({ hostnames: [l.spec.hostname ?? '*'], secrets: l.certificates }));
      for (const c of certificates) for (const s of c.secrets) usedSecrets.add(s);
      listener.tls = { certificates };
    }
    fleetListeners.push(listener);
  }
  const clusters: Cluster[] = [];
  const endpoints: ClusterEndpoints[] = [];
  for (const name of usedClusters) {
    const c = input.clusters.get(name);
    if (c === undefined) continue;
    clusters.push(c.cluster);
    endpoints.push(c.endpoints);
  }
  const secrets: TlsSecret[] = [];
  for (const id of usedSecrets) {
    const s = input.lookup.secrets.get(id);
    const pems = s === undefined ? undefined : tlsSecretPems(s);
    if (pems !== undefined) secrets.push({ name: id, ...pems });
  }
  const gateways = input.gateways
    .filter((g) => g.listeners.some(ready))
    .map((g) => ({ name: g.key, generation: g.gateway.metadata.generation }));
  return {
    schemaVersion: FLEET_CONFIG_SCHEMA_VERSION,
    fleet: input.key,
    gateways: gateways.sort(byName),
    listeners: fleetListeners.sort(byName),
    virtualHosts: virtualHosts.sort(byName),
    clusters: clusters.sort(byName),
    endpoints: endpoints.sort(byName),
    secrets: secrets.sort(byName),
  };
}

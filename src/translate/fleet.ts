// One fleet's FleetConfig from its Gateways' ready listeners and attached routes (src/ir/fleet-config.ts).
// The full build records how it derived each VirtualHost (fleet-hosts.ts); when only attached routes changed,
// the next build redoes just their VirtualHosts (fleet-update.ts), with byte-identical output.
import type { RouteObject } from '../api/route-kinds.js';
import {
  FLEET_CONFIG_SCHEMA_VERSION,
  type FleetConfig,
  type Listener,
  type TlsCertificateChoice,
  type TlsSecret,
  type VirtualHost,
} from '../ir/fleet-config.js';
import type { ClusterTable } from './backends.js';
import {
  byName,
  bySpecificity,
  clustersOf,
  type FleetBuildState,
  fleetClusters,
  type HostState,
  hostVirtualHost,
  type PortState,
  type RouteEntry,
  sameItems,
} from './fleet-hosts.js';
import { updateFleet } from './fleet-update.js';
import { compareSpecificity, covers, effectiveHostnames, isWildcard, listenerServes } from './hostnames.js';
import { type ListenerState, ready } from './listeners.js';
import type { SnapshotLookup } from './lookup.js';
import type { GatewayEntry, RouteState } from './routes.js';
import { tlsSecretPems } from './secrets.js';
import type { TranslateCache } from './types.js';

export interface FleetInput {
  key: string;
  /** The fleet's Gateways, oldest first. */
  gateways: GatewayEntry[];
  routes: Map<RouteObject, RouteState>;
  clusters: ClusterTable;
  lookup: SnapshotLookup;
}

/** Identity of everything a fleet config is derived from except its attached routes. */
function frameDeps(input: FleetInput, listeners: ListenerState[]): unknown[] {
  const deps: unknown[] = [input.key];
  for (const g of input.gateways) deps.push(g.gateway);
  for (const l of listeners) {
    deps.push(`${l.gatewayKey}|${l.index}|${l.certificates.join(',')}`);
    for (const c of l.certificates) deps.push(input.lookup.secrets.get(c));
  }
  return deps;
}

/** What the incremental path came to: a config, a change it does not handle, or a throw (a bug) and why. */
type IncrementalOutcome =
  | { kind: 'built'; config: FleetConfig }
  | { kind: 'needs-full-build' }
  | { kind: 'failed'; reason: string };

function buildIncrementally(
  state: FleetBuildState,
  input: FleetInput,
  listeners: ListenerState[],
): IncrementalOutcome {
  try {
    const config = updateFleet(state, input, listeners);
    return config === undefined ? { kind: 'needs-full-build' } : { kind: 'built', config };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { kind: 'failed', reason: `fleet ${input.key}: ${reason}` };
  }
}

export function buildFleet(input: FleetInput, cache?: TranslateCache): FleetConfig {
  const listeners = input.gateways.flatMap((g) => g.listeners.filter(ready));
  if (cache === undefined) return buildFleetUncached(input, listeners, undefined).config;
  const counts = cache.fleetBuilds;
  const frame = frameDeps(input, listeners);
  const before = cache.fleets.get(input.key);
  if (before !== undefined && sameItems(before.frame, frame)) {
    const outcome = buildIncrementally(before, input, listeners);
    if (outcome.kind === 'built') {
      counts.incremental++;
      return outcome.config;
    }
    // A bug in the incremental path must not cost correctness: the full build below is the reference.
    if (outcome.kind === 'failed') {
      counts.incrementalFailures++;
      counts.lastIncrementalFailure = outcome.reason;
    }
  }
  counts.full++;
  const state = buildFleetUncached(input, listeners, before?.config);
  state.frame = frame;
  cache.fleets.set(input.key, state);
  return state.config;
}

function buildFleetUncached(
  input: FleetInput,
  listeners: ListenerState[],
  previous: FleetConfig | undefined,
): FleetBuildState {
  const previousHosts = new Map(previous?.virtualHosts.map((v) => [v.name, v]));
  const indexOf = new Map(listeners.map((l, i) => [l, i]));
  const entries = listeners.map(() => new Map<RouteObject, RouteEntry>());
  const ports = new Map<number, PortState>();
  const byPort = new Map<number, ListenerState[]>();
  for (const l of listeners) {
    const list = byPort.get(l.spec.port);
    if (list === undefined) byPort.set(l.spec.port, [l]);
    else list.push(l);
  }
  const fleetListeners: Listener[] = [];
  const virtualHosts: VirtualHost[] = [];
  const clusterRefs = new Map<string, number>();
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
    const hosts = new Map<string, HostState>();
    const hostRefs = new Map<string, number>();
    const wildcards: RouteEntry[] = [];
    const listenerHostnames = new Set<string>();
    const effective = new Map<ListenerState, { route: RouteState; hostnames: string[] }[]>();
    const addHost = (h: string) => {
      if (hosts.has(h)) return;
      const owner = ownerOf(h);
      if (owner !== undefined) {
        hosts.set(h, {
          hostname: h,
          name: `port-${port}/${h}`,
          owner: indexOf.get(owner)!,
          contributors: new Map(),
        });
      }
    };
    for (const l of onPort) {
      const own = l.spec.hostname ?? '*';
      listenerHostnames.add(own);
      addHost(own);
      const list: { route: RouteState; hostnames: string[] }[] = [];
      for (const route of l.attached) {
        const rs = input.routes.get(route);
        if (rs === undefined) continue;
        const hostnames = effectiveHostnames(l.spec.hostname, route.spec.hostnames);
        for (const h of hostnames) {
          addHost(h);
          hostRefs.set(h, (hostRefs.get(h) ?? 0) + 1);
        }
        list.push({ route: rs, hostnames });
      }
      effective.set(l, list);
    }
    // A route serves every VirtualHost of its listener that one of its hostnames covers: requests for
    // foo.example.com pick that VirtualHost only, so routes for *.example.com must be there too.
    const allHosts = [...hosts.values()];
    for (const l of onPort) {
      const li = indexOf.get(l)!;
      for (const { route: rs, hostnames } of effective.get(l) ?? []) {
        const entry: RouteEntry = {
          listener: li,
          rs,
          hostnames,
          targets: [],
          clusters: clustersOf(rs.backends),
        };
        for (const e of hostnames) {
          const exact = e === '*' || isWildcard(e) ? undefined : hosts.get(e);
          const targets =
            exact !== undefined
              ? exact.owner === li
                ? [exact]
                : []
              : e === '*' || isWildcard(e)
                ? allHosts.filter(
                    (v) => v.owner === li && (e === '*' || e === v.hostname || covers(e, v.hostname)),
                  )
                : [];
          for (const host of targets) {
            if (host.contributors.has(rs.route)) continue;
            host.contributors.set(rs.route, rs);
            entry.targets.push(host);
          }
        }
        if (entry.targets.length > 0) {
          for (const c of entry.clusters) clusterRefs.set(c, (clusterRefs.get(c) ?? 0) + 1);
        }
        entries[li]!.set(rs.route, entry);
        if (hostnames.some((h) => h === '*' || isWildcard(h))) wildcards.push(entry);
      }
    }
    for (const host of hosts.values()) {
      host.vhost = hostVirtualHost(host, previousHosts.get(host.name));
      virtualHosts.push(host.vhost);
    }
    const names = [...hosts.values()].sort(bySpecificity);
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
    ports.set(port, {
      port,
      listeners: onPort.map((l) => indexOf.get(l)!),
      listenerHostnames,
      hosts,
      hostRefs,
      wildcards,
      names,
      listener,
    });
  }
  const { clusters, endpoints, objects } = fleetClusters(clusterRefs.keys(), input.clusters);
  const secrets: TlsSecret[] = [];
  for (const id of usedSecrets) {
    const s = input.lookup.secrets.get(id);
    const pems = s === undefined ? undefined : tlsSecretPems(s);
    if (pems !== undefined) secrets.push({ name: id, ...pems });
  }
  const gateways = input.gateways
    .filter((g) => g.listeners.some(ready))
    .map((g) => ({ name: g.key, generation: g.gateway.metadata.generation }));
  const config: FleetConfig = {
    schemaVersion: FLEET_CONFIG_SCHEMA_VERSION,
    fleet: input.key,
    gateways: gateways.sort(byName),
    listeners: fleetListeners.sort(byName),
    virtualHosts: virtualHosts.sort(byName),
    clusters,
    endpoints,
    secrets: secrets.sort(byName),
  };
  return { frame: [], entries, ports, clusterRefs, clusterObjects: objects, config };
}

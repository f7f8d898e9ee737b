// One applied config, compiled: what a request needs, looked up by name. A request resolves its listener, host,
// route and endpoint at its start, in one go, and keeps what it resolved; so a config that changed a few
// resources updates the lookup tables in place (all at once, between two requests) instead of building new ones
// for thousands of VirtualHosts, and requests in flight finish on what they started with.
import type {
  ClusterProtocol,
  ClusterTls,
  Endpoint,
  FleetConfig,
  VirtualHost,
} from '../../ir/fleet-config.js';
import { type FleetConfigChange, findByName } from '../../ir/fleet-config-patch.js';
import { type CompiledAccessPolicy, compileAccessPolicy } from '../access/pipeline.js';
import type { LoadBalancing } from '../options.js';
import {
  addHost,
  type CompiledVirtualHost,
  compiledVirtualHost,
  compileVirtualHosts,
  emptyHostTable,
  type HostTable,
  removeHost,
} from './route-table.js';

export interface ListenerRoutes {
  listener: FleetConfig['listeners'][number];
  hosts: HostTable;
}

export interface ClusterState {
  name: string;
  /** How its endpoints are reached: HTTP/1.1, or HTTP/2 with prior knowledge. */
  protocol: ClusterProtocol;
  /** Present: TLS to the endpoints as the cluster's BackendTLSPolicy says. */
  tls: ClusterTls | undefined;
  endpoints: Endpoint[];
  /** Round-robin position. */
  next: number;
}

export interface Snapshot {
  config: FleetConfig;
  version: string;
  listeners: Map<string, ListenerRoutes>;
  clusters: Map<string, ClusterState>;
  /** Compiled VirtualHosts by name. */
  vhosts: Map<string, CompiledVirtualHost>;
  /** Compiled policies by name (routes and VirtualHosts name them). */
  policies: Map<string, CompiledAccessPolicy>;
  /** Some VirtualHost has listener request filters: without any, a request goes straight to route matching. */
  filtered: boolean;
}

function anyFiltered(vhosts: ReadonlyMap<string, CompiledVirtualHost>): boolean {
  for (const v of vhosts.values()) if (v.requestFilters !== undefined) return true;
  return false;
}

type CompiledCache = WeakMap<VirtualHost, CompiledVirtualHost>;

function clusterState(config: FleetConfig, name: string): ClusterState | undefined {
  const c = findByName(config.clusters, name);
  if (c === undefined) return undefined;
  const endpoints = findByName(config.endpoints, name)?.endpoints ?? [];
  return { name, protocol: c.protocol, tls: c.tls, endpoints, next: 0 };
}

/**
 * `config` compiled. With `previous` (the snapshot serving) and `change` (how `config` came from its config), only
 * the changed VirtualHosts and clusters are compiled and put in `previous`'s tables, which the result shares;
 * `cache` (per proxy) reuses the compiled form of VirtualHost objects seen before.
 */
export function compileSnapshot(
  config: FleetConfig,
  version: string,
  cache?: CompiledCache,
  previous?: Snapshot,
  change?: FleetConfigChange,
): Snapshot {
  if (
    previous !== undefined &&
    change !== undefined &&
    change.since === previous.config &&
    change.config === config &&
    config.listeners === previous.config.listeners
  ) {
    return updatedSnapshot(previous, config, version, change, cache);
  }
  const vhosts = compileVirtualHosts(config, cache);
  const listeners = new Map(config.listeners.map((l) => [l.name, { listener: l, hosts: emptyHostTable() }]));
  // One pass: each VirtualHost into its listener's table, as a change puts one in (updatedSnapshot).
  for (const c of vhosts.values()) {
    const table = listeners.get(c.listener)?.hosts;
    if (table !== undefined) addHost(table, c);
  }
  const endpoints = new Map(config.endpoints.map((e) => [e.name, e.endpoints]));
  const clusters = new Map(
    config.clusters.map((c) => [
      c.name,
      { name: c.name, protocol: c.protocol, tls: c.tls, endpoints: endpoints.get(c.name) ?? [], next: 0 },
    ]),
  );
  const policies = new Map(config.policies.map((p) => [p.name, compileAccessPolicy(p)]));
  return { config, version, listeners, clusters, vhosts, policies, filtered: anyFiltered(vhosts) };
}

/** The serving tables with the change put in: compiled first (it may throw), then changed in one go. */
function updatedSnapshot(
  previous: Snapshot,
  config: FleetConfig,
  version: string,
  change: FleetConfigChange,
  cache: CompiledCache | undefined,
): Snapshot {
  const compiled: CompiledVirtualHost[] = [];
  const clusterNames = new Set<string>();
  const policies = new Map<string, CompiledAccessPolicy | undefined>();
  for (const { type, name } of change.changed) {
    if (type === 'policies') {
      const p = findByName(config.policies, name);
      if (p !== undefined) policies.set(name, compileAccessPolicy(p));
    } else if (type === 'virtualHosts') {
      const v = findByName(config.virtualHosts, name);
      if (v !== undefined) compiled.push(compiledVirtualHost(v, cache));
    } else if (type === 'clusters' || type === 'endpoints') clusterNames.add(name);
  }
  for (const { type, name } of change.removed) {
    if (type === 'clusters' || type === 'endpoints') clusterNames.add(name);
    else if (type === 'policies') policies.set(name, undefined);
  }
  const { vhosts, listeners, clusters } = previous;
  const take = (old: CompiledVirtualHost | undefined) => {
    const table = old === undefined ? undefined : listeners.get(old.listener)?.hosts;
    if (table !== undefined) removeHost(table, old!);
  };
  for (const { type, name } of change.removed) {
    if (type !== 'virtualHosts') continue;
    take(vhosts.get(name));
    vhosts.delete(name);
  }
  for (const c of compiled) {
    take(vhosts.get(c.name));
    vhosts.set(c.name, c);
    const table = listeners.get(c.listener)?.hosts;
    if (table !== undefined) addHost(table, c);
  }
  for (const name of clusterNames) {
    const state = clusterState(config, name);
    if (state === undefined) clusters.delete(name);
    else clusters.set(name, state);
  }
  for (const [name, policy] of policies) {
    if (policy === undefined) previous.policies.delete(name);
    else previous.policies.set(name, policy);
  }
  const filtered = anyFiltered(vhosts);
  return { config, version, listeners, clusters, vhosts, policies: previous.policies, filtered };
}

/** By address and port: a config change between two attempts makes new objects for the same endpoints. */
function sameEndpoint(a: Endpoint, b: Endpoint): boolean {
  return a === b || (a.port === b.port && a.address === b.address);
}

export function endpointKey(e: Endpoint): string {
  return e.address.includes(':') ? `[${e.address}]:${e.port}` : `${e.address}:${e.port}`;
}

/**
 * Round-robin, or the endpoint with fewest requests in flight (ties broken round-robin); never `avoid` (the
 * endpoint a retry's last attempt failed on) when the cluster has another.
 */
export function pickEndpoint(
  cluster: ClusterState,
  mode: LoadBalancing,
  active: ReadonlyMap<string, number>,
  avoid?: Endpoint,
): Endpoint | undefined {
  const n = cluster.endpoints.length;
  if (n === 0) return undefined;
  let start = cluster.next++ % n;
  if (cluster.next > 1e9) cluster.next = 0;
  if (n === 1) return cluster.endpoints[0];
  if (avoid !== undefined && sameEndpoint(cluster.endpoints[start]!, avoid)) start = (start + 1) % n;
  if (mode === 'round-robin') return cluster.endpoints[start];
  let best = cluster.endpoints[start]!;
  let bestActive = active.get(endpointKey(best)) ?? 0;
  for (let i = 1; i < n && bestActive > 0; i++) {
    const e = cluster.endpoints[(start + i) % n]!;
    if (avoid !== undefined && sameEndpoint(e, avoid)) continue;
    const a = active.get(endpointKey(e)) ?? 0;
    if (a < bestActive) {
      best = e;
      bestActive = a;
    }
  }
  return best;
}

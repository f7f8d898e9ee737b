// One applied config, compiled: what a request needs, looked up by name. Immutable once built except for
// load-balancing counters, so a request keeps the snapshot it started with across a swap.
import type { ClusterProtocol, Endpoint, FleetConfig, Listener, VirtualHost } from '../ir/fleet-config.js';
import type { LoadBalancing } from './options.js';
import {
  type CompiledVirtualHost,
  compileHostTable,
  compileVirtualHosts,
  type HostTable,
} from './routing.js';

export interface ListenerRoutes {
  listener: Listener;
  hosts: HostTable;
}

export interface ClusterState {
  name: string;
  /** How its endpoints are reached: HTTP/1.1, or HTTP/2 with prior knowledge. */
  protocol: ClusterProtocol;
  endpoints: Endpoint[];
  /** Round-robin position. */
  next: number;
}

export interface Snapshot {
  config: FleetConfig;
  version: string;
  listeners: Map<string, ListenerRoutes>;
  clusters: Map<string, ClusterState>;
}

export function compileSnapshot(
  config: FleetConfig,
  version: string,
  cache?: WeakMap<VirtualHost, CompiledVirtualHost>,
): Snapshot {
  const vhosts = compileVirtualHosts(config, cache);
  const listeners = new Map(
    config.listeners.map((l) => [l.name, { listener: l, hosts: compileHostTable(l, vhosts) }]),
  );
  const endpoints = new Map(config.endpoints.map((e) => [e.name, e.endpoints]));
  const clusters = new Map(
    config.clusters.map((c) => [
      c.name,
      { name: c.name, protocol: c.protocol, endpoints: endpoints.get(c.name) ?? [], next: 0 },
    ]),
  );
  return { config, version, listeners, clusters };
}

export function endpointKey(e: Endpoint): string {
  return e.address.includes(':') ? `[${e.address}]:${e.port}` : `${e.address}:${e.port}`;
}

/** Round-robin, or the endpoint with fewest requests in flight (ties broken round-robin). */
export function pickEndpoint(
  cluster: ClusterState,
  mode: LoadBalancing,
  active: ReadonlyMap<string, number>,
): Endpoint | undefined {
  const n = cluster.endpoints.length;
  if (n === 0) return undefined;
  const start = cluster.next++ % n;
  if (cluster.next > 1e9) cluster.next = 0;
  if (mode === 'round-robin' || n === 1) return cluster.endpoints[start];
  let best = cluster.endpoints[start]!;
  let bestActive = active.get(endpointKey(best)) ?? 0;
  for (let i = 1; i < n && bestActive > 0; i++) {
    const e = cluster.endpoints[(start + i) % n]!;
    const a = active.get(endpointKey(e)) ?? 0;
    if (a < bestActive) {
      best = e;
      bestActive = a;
    }
  }
  return best;
}

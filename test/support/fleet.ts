// Small builders for fleet configs in tests: only what a test cares about is spelled out.
import {
  type Cluster,
  type ClusterEndpoints,
  FLEET_CONFIG_SCHEMA_VERSION,
  type FleetConfig,
  type FleetPolicy,
  type ForwardAction,
  type Listener,
  type Route,
  type RouteAction,
  type RouteFilter,
  type RouteMatch,
  type TlsSecret,
  type VirtualHost,
  type WeightedBackend,
} from '../../src/ir/fleet-config.js';

export interface Upstream {
  cluster: Cluster;
  endpoints: ClusterEndpoints;
}

export function upstream(name: string, ports: number[], address = '127.0.0.1'): Upstream {
  return {
    cluster: { name, service: { namespace: 'default', name, port: 80 }, protocol: 'http' },
    endpoints: { name, endpoints: ports.map((port) => ({ address, port })) },
  };
}

export function forward(
  backends: (string | WeightedBackend)[],
  extra: Partial<Omit<ForwardAction, 'type' | 'backends'>> = {},
): ForwardAction {
  return {
    type: 'Forward',
    backends: backends.map((b) => (typeof b === 'string' ? { weight: 1, cluster: b, filters: [] } : b)),
    timeoutMs: 15_000,
    ...extra,
  };
}

let routeCounter = 0;

export function route(
  action: RouteAction,
  match: Partial<RouteMatch> = {},
  filters: RouteFilter[] = [],
): Route {
  const n = routeCounter++;
  return {
    name: `default/r${n}/rule/0/match/0`,
    routeRef: { namespace: 'default', name: `r${n}`, rule: 0 },
    match: { headers: [], queryParams: [], ...match },
    filters,
    action,
  };
}

export function vhost(port: number, hostname: string, routes: Route[]): VirtualHost {
  return { name: `port-${port}/${hostname}`, listener: `port-${port}`, hostname, routes };
}

/** The listener of port `port`, named `port-N` as its VirtualHosts name it (`vhost(port, ...)`). */
export function listener(port: number, tls?: Listener['tls']): Listener {
  return {
    name: `port-${port}`,
    port,
    protocol: tls === undefined ? 'HTTP' : 'HTTPS',
    gatewayListeners: [{ gateway: 'default/eg', listener: `l${port}` }],
    ...(tls === undefined ? {} : { tls }),
  };
}

export function fleet(
  listeners: { listener: Listener; vhosts: VirtualHost[] }[],
  upstreams: Upstream[] = [],
  secrets: TlsSecret[] = [],
  policies: FleetPolicy[] = [],
): FleetConfig {
  return {
    schemaVersion: FLEET_CONFIG_SCHEMA_VERSION,
    fleet: 'default/eg',
    gateways: [{ name: 'default/eg', generation: 1 }],
    listeners: listeners.map((l) => l.listener),
    virtualHosts: listeners.flatMap((l) => l.vhosts),
    clusters: upstreams.map((u) => u.cluster),
    endpoints: upstreams.map((u) => u.endpoints),
    secrets,
    policies,
  };
}

/** One HTTP listener on Gateway port 80 with the given virtual hosts. */
export function simpleFleet(vhosts: VirtualHost[], upstreams: Upstream[] = []): FleetConfig {
  return fleet([{ listener: listener(80), vhosts }], upstreams);
}

// backendRefs → Clusters: Service and port lookup, ReferenceGrant, EndpointSlice ports by name, ready endpoints.
import type { Service } from '../api/core.js';
import { GATEWAY_API_GROUP } from '../api/gateway-class.js';
import { isLayer4Route, type RouteObject } from '../api/route-kinds.js';
import type { Cluster, ClusterEndpoints, ClusterProtocol, Endpoint } from '../ir/fleet-config.js';
import { backendTlsFor } from './backend-tls.js';
import type { Verdict } from './conditions.js';
import { notFound, referenceGranted, type SnapshotLookup } from './lookup.js';

export interface ResolvedCluster {
  cluster: Cluster;
  endpoints: ClusterEndpoints;
  /** The objects this cluster was derived from, for memoisation by identity. */
  deps: readonly unknown[];
}

export interface ResolvedBackend {
  weight: number;
  /** Absent: the backendRef is invalid (its share answers 500). */
  cluster?: string;
}

export interface ResolvedRoute {
  /** Per rule, per backendRef. */
  rules: ResolvedBackend[][];
  /** ResolvedRefs for every parent: the first failing backendRef's reason. */
  refs: Verdict;
}

/** Memo per translation: many routes share a Service. */
export type ClusterTable = Map<string, ResolvedCluster>;

function sameObjects(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** The Kubernetes standard appProtocol of HTTP/2 over cleartext with prior knowledge (KEP-3726). */
export const H2C_APP_PROTOCOL = 'kubernetes.io/h2c';

/** What a Service port asks for by its appProtocol: h2c, or HTTP/1.1 for anything else (`kubernetes.io/ws`…). */
function portProtocol(appProtocol: string | undefined): ClusterProtocol {
  return appProtocol === H2C_APP_PROTOCOL ? 'h2c' : 'http';
}

/**
 * `<ns>/<service>:<port>` when the routes speak the port's own protocol; otherwise with `/<protocol>` after it,
 * so a port that a GRPCRoute (always h2c) and an HTTPRoute (its appProtocol) both use gets one cluster each.
 */
export function clusterName(service: Service, port: number, protocol: ClusterProtocol): string {
  const base = `${service.metadata.namespace ?? ''}/${service.metadata.name}:${port}`;
  const own = portProtocol(service.spec.ports.find((p) => p.port === port)?.appProtocol);
  return protocol === own ? base : `${base}/${protocol}`;
}

/**
 * What a route's backends speak: gRPC is HTTP/2 end to end (h2c whatever the port's appProtocol says); layer-4
 * routes relay TCP (TLSRoute, TCPRoute) or UDP (UDPRoute); an HTTPRoute follows the port's appProtocol.
 */
function routeProtocol(route: RouteObject, appProtocol: string | undefined): ClusterProtocol {
  if (isLayer4Route(route)) return route.kind === 'UDPRoute' ? 'udp' : 'tcp';
  return route.kind === 'GRPCRoute' ? 'h2c' : portProtocol(appProtocol);
}

function resolveCluster(
  service: Service,
  port: number,
  protocol: ClusterProtocol,
  lookup: SnapshotLookup,
  table: ClusterTable,
  previous: ClusterTable | undefined,
): string {
  const ns = service.metadata.namespace ?? '';
  const name = clusterName(service, port, protocol);
  if (table.has(name)) return name;
  const slices = lookup.slices.get(`${ns}/${service.metadata.name}`) ?? [];
  const before = previous?.get(name);
  // UDP is relayed as it comes. A tcp cluster keeps its policy: the proxy originates TLS with it only for a
  // connection whose TLS it ended itself (a TLSRoute on a terminate listener), never for one it passes through.
  const tls = protocol === 'udp' ? undefined : backendTlsFor(lookup.backendTls, service, port);
  const deps = tls === undefined ? [service, ...slices] : [service, ...slices, tls.policy, tls.tls.caPem];
  // Same Service, EndpointSlice and policy objects as last time: keep the same Cluster objects (cheap diffs).
  if (before !== undefined && sameObjects(before.deps, deps)) {
    table.set(name, before);
    return name;
  }
  const servicePort = service.spec.ports.find((p) => p.port === port);
  const seen = new Set<string>();
  const endpoints: Endpoint[] = [];
  for (const slice of slices) {
    const transport = protocol === 'udp' ? 'UDP' : 'TCP';
    const slicePort = slice.ports.find(
      (p) => p.name === (servicePort?.name ?? '') && p.protocol === transport,
    );
    if (slicePort?.port === undefined) continue;
    for (const e of slice.endpoints) {
      if (e.conditions.ready === false) continue;
      for (const address of e.addresses) {
        const key = `${address}|${slicePort.port}`;
        if (seen.has(key)) continue;
        seen.add(key);
        endpoints.push({ address, port: slicePort.port });
      }
    }
  }
  endpoints.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : a.port - b.port));
  const cluster: Cluster = { name, service: { namespace: ns, name: service.metadata.name, port }, protocol };
  if (tls !== undefined) cluster.tls = tls.tls;
  table.set(name, {
    cluster,
    // A policy that cannot be honoured leaves no endpoint to try (503): fail closed, never plaintext.
    endpoints: { name, endpoints: tls?.tls.refused === undefined ? endpoints : [] },
    deps,
  });
  return name;
}

/** Route-level memo: valid while the lookup (Services, slices, grants…) is the same object. */
export interface BackendMemo {
  backends: WeakMap<
    RouteObject,
    { lookup: SnapshotLookup; resolved: ResolvedRoute; clusters: ResolvedCluster[] }
  >;
  /** The previous translation's clusters. */
  clusters: ClusterTable;
}

export function resolveRouteBackends(
  route: RouteObject,
  lookup: SnapshotLookup,
  table: ClusterTable,
  memo?: BackendMemo,
): ResolvedRoute {
  const hit = memo?.backends.get(route);
  if (hit !== undefined && hit.lookup === lookup) {
    for (const c of hit.clusters) if (!table.has(c.cluster.name)) table.set(c.cluster.name, c);
    return hit.resolved;
  }
  const resolved = resolveUncached(route, lookup, table, memo?.clusters);
  if (memo !== undefined) {
    const clusters: ResolvedCluster[] = [];
    for (const rule of resolved.rules) {
      for (const b of rule) {
        const c = b.cluster === undefined ? undefined : table.get(b.cluster);
        if (c !== undefined) clusters.push(c);
      }
    }
    memo.backends.set(route, { lookup, resolved, clusters });
  }
  return resolved;
}

function resolveUncached(
  route: RouteObject,
  lookup: SnapshotLookup,
  table: ClusterTable,
  previous: ClusterTable | undefined,
): ResolvedRoute {
  let refs: Verdict = { ok: true, reason: 'ResolvedRefs', message: 'Resolved all references' };
  const routeNs = route.metadata.namespace ?? '';
  const rules = route.spec.rules.map((rule, i) =>
    rule.backendRefs.map((b, k): ResolvedBackend => {
      const fail = (reason: string, message: string): ResolvedBackend => {
        const text = `spec.rules[${i}].backendRefs[${k}]: ${message}`;
        // The reason is the first failure's; the message lists them all.
        refs = refs.ok
          ? { ok: false, reason, message: text }
          : { ...refs, message: `${refs.message}; ${text}` };
        return { weight: b.weight };
      };
      if (b.group !== '' || b.kind !== 'Service') {
        return fail('InvalidKind', `unsupported backend kind ${b.group === '' ? 'core' : b.group}/${b.kind}`);
      }
      const ns = b.namespace ?? routeNs;
      const id = `${ns}/${b.name}`;
      const permitted = referenceGranted(lookup, {
        fromGroup: GATEWAY_API_GROUP,
        fromKind: route.kind,
        fromNamespace: routeNs,
        toGroup: '',
        toKind: 'Service',
        toNamespace: ns,
        toName: b.name,
      });
      if (!permitted)
        return fail(
          'RefNotPermitted',
          `Service ${id} is in another namespace and no ReferenceGrant allows it`,
        );
      const service = lookup.services.get(id);
      if (service === undefined) return fail('BackendNotFound', notFound(lookup, 'Service', ns, b.name));
      const port = b.port ?? 0;
      const servicePort = service.spec.ports.find((p) => p.port === port);
      if (servicePort === undefined) return fail('BackendNotFound', `Service ${id} has no port ${port}`);
      return {
        weight: b.weight,
        cluster: resolveCluster(
          service,
          port,
          routeProtocol(route, servicePort.appProtocol),
          lookup,
          table,
          previous,
        ),
      };
    }),
  );
  return { rules, refs };
}

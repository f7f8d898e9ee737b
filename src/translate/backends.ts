// backendRefs → Clusters: Service and port lookup, ReferenceGrant, EndpointSlice ports by name, ready endpoints.
import type { Service } from '../api/core.js';
import { GATEWAY_API_GROUP } from '../api/gateway-class.js';
import type { HTTPRouteFilter } from '../api/http-route.js';
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
  /** Per rule, per RequestMirror filter: its cluster; undefined when its backendRef is invalid (not mirrored). */
  mirrors: (string | undefined)[][];
  /** ResolvedRefs for every parent: the first failing backendRef's reason. */
  refs: Verdict;
  /** The clusters of the route's ExternalAuth filters' Services. */
  authClusters?: string[];
}

/** Distinct cluster names a route uses: its backends', its mirrors' and its authorization services'. */
export function clustersOf(backends: ResolvedRoute): string[] {
  const names = new Set<string>();
  for (const rule of backends.rules) for (const b of rule) if (b.cluster !== undefined) names.add(b.cluster);
  for (const rule of backends.mirrors)
    for (const cluster of rule) if (cluster !== undefined) names.add(cluster);
  for (const name of backends.authClusters ?? []) names.add(name);
  return [...names];
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
    for (const name of clustersOf(resolved)) {
      const c = table.get(name);
      if (c !== undefined) clusters.push(c);
    }
    memo.backends.set(route, { lookup, resolved, clusters });
  }
  return resolved;
}

/** A Service reference a route makes (a backendRef, a RequestMirror's or an ExternalAuth filter's). */
interface ServiceRef {
  group: string;
  kind: string;
  name: string;
  namespace?: string | undefined;
  port?: number | undefined;
}

/** Who refers to a Service: what a ReferenceGrant must name as `from`. */
export interface Referrer {
  group: string;
  kind: string;
  namespace: string;
}

/** The Service and port a reference names, or why it cannot be used (a ResolvedRefs reason and message). */
export function serviceOf(
  b: ServiceRef,
  from: Referrer,
  lookup: SnapshotLookup,
): { service: Service; port: number; appProtocol: string | undefined } | { reason: string; message: string } {
  if (b.group !== '' || b.kind !== 'Service')
    return {
      reason: 'InvalidKind',
      message: `unsupported backend kind ${b.group === '' ? 'core' : b.group}/${b.kind}`,
    };
  const ns = b.namespace ?? from.namespace;
  const id = `${ns}/${b.name}`;
  const permitted = referenceGranted(lookup, {
    fromGroup: from.group,
    fromKind: from.kind,
    fromNamespace: from.namespace,
    toGroup: '',
    toKind: 'Service',
    toNamespace: ns,
    toName: b.name,
  });
  if (!permitted)
    return {
      reason: 'RefNotPermitted',
      message: `Service ${id} is in another namespace and no ReferenceGrant allows it`,
    };
  const service = lookup.services.get(id);
  if (service === undefined)
    return { reason: 'BackendNotFound', message: notFound(lookup, 'Service', ns, b.name) };
  const port = b.port ?? 0;
  const servicePort = service.spec.ports.find((p) => p.port === port);
  if (servicePort === undefined)
    return { reason: 'BackendNotFound', message: `Service ${id} has no port ${port}` };
  return { service, port, appProtocol: servicePort.appProtocol };
}

function resolveUncached(
  route: RouteObject,
  lookup: SnapshotLookup,
  table: ClusterTable,
  previous: ClusterTable | undefined,
): ResolvedRoute {
  let refs: Verdict = { ok: true, reason: 'ResolvedRefs', message: 'Resolved all references' };
  const from: Referrer = {
    group: GATEWAY_API_GROUP,
    kind: route.kind,
    namespace: route.metadata.namespace ?? '',
  };
  /** The cluster `field` names (speaking what `protocolOf` says), or undefined with its failure added to `refs`. */
  const clusterOf = (
    b: ServiceRef,
    field: string,
    protocolOf: (appProtocol: string | undefined) => ClusterProtocol,
  ): string | undefined => {
    const found = serviceOf(b, from, lookup);
    if ('reason' in found) {
      const text = `${field}: ${found.message}`;
      // The reason is the first failure's; the message lists them all.
      refs = refs.ok
        ? { ok: false, reason: found.reason, message: text }
        : { ...refs, message: `${refs.message}; ${text}` };
      return undefined;
    }
    return resolveCluster(found.service, found.port, protocolOf(found.appProtocol), lookup, table, previous);
  };
  const backendProtocol = (appProtocol: string | undefined): ClusterProtocol =>
    routeProtocol(route, appProtocol);
  const rules: ResolvedBackend[][] = [];
  const mirrors: (string | undefined)[][] = [];
  const authClusters: string[] = [];
  route.spec.rules.forEach((rule, i) => {
    rules.push(
      rule.backendRefs.map((b, k): ResolvedBackend => {
        const cluster = clusterOf(b, `spec.rules[${i}].backendRefs[${k}]`, backendProtocol);
        return cluster === undefined ? { weight: b.weight } : { weight: b.weight, cluster };
      }),
    );
    const ruleMirrors: (string | undefined)[] = [];
    // Layer-4 rules have no filters.
    const filters: readonly HTTPRouteFilter[] =
      route.kind === 'HTTPRoute' || route.kind === 'GRPCRoute' ? route.spec.rules[i]!.filters : [];
    filters.forEach((f, j) => {
      const at = `spec.rules[${i}].filters[${j}]`;
      if (f.type === 'RequestMirror' && f.requestMirror !== undefined)
        ruleMirrors.push(
          clusterOf(f.requestMirror.backendRef, `${at}.requestMirror.backendRef`, backendProtocol),
        );
      // An authorization service is a cluster for its endpoints; unresolved, its filter refuses every request.
      const auth = 'externalAuth' in f ? f.externalAuth?.backendRef : undefined;
      if (auth === undefined) return;
      const cluster = clusterOf(auth, `${at}.externalAuth.backendRef`, portProtocol);
      if (cluster !== undefined) authClusters.push(cluster);
    });
    mirrors.push(ruleMirrors);
  });
  return authClusters.length === 0 ? { rules, mirrors, refs } : { rules, mirrors, refs, authClusters };
}

/**
 * The cluster `<ns>/<service>:<port>` (a policy's authorization service, checked when the policy was compiled) in
 * `table`, resolved with its endpoints; false when the Service or port is gone.
 */
export function resolveNamedCluster(
  name: string,
  lookup: SnapshotLookup,
  table: ClusterTable,
  previous: ClusterTable | undefined,
): boolean {
  if (table.has(name)) return true;
  const at = name.lastIndexOf(':');
  const service = lookup.services.get(name.slice(0, at));
  const port = Number(name.slice(at + 1));
  const servicePort = service?.spec.ports.find((p) => p.port === port);
  if (service === undefined || servicePort === undefined) return false;
  resolveCluster(service, port, portProtocol(servicePort.appProtocol), lookup, table, previous);
  return true;
}

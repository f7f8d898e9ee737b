// ResourceSnapshot: one immutable view of every object the translator reads, arrays per kind.
import type { AccessPolicy } from './access-policy.js';
import type { BackendTLSPolicy } from './backend-tls-policy.js';
import type { ClientTrafficPolicy } from './client-traffic-policy.js';
import type { ClusterTrustBundle, ConfigMap, EndpointSlice, Namespace, Secret, Service } from './core.js';
import type { DataPlaneProxy } from './data-plane-proxy.js';
import type { Gateway } from './gateway.js';
import type { InstalledCrds } from './gateway-api-bundle.js';
import type { GatewayClass } from './gateway-class.js';
import type { GRPCRoute } from './grpc-route.js';
import type { HTTPRoute } from './http-route.js';
import type { ApiObject } from './kinds.js';
import type { TCPRoute, TLSRoute, UDPRoute } from './layer4-routes.js';
import type { ListenerSet } from './listener-set.js';
import type { RateLimitPolicy } from './rate-limit-policy.js';
import type { ReferenceGrant } from './reference-grant.js';

/** An object the provider received and cannot use, and why: the objects that refer to it give the reason. */
export interface UnusableObject {
  kind: string;
  namespace?: string;
  name: string;
  /** `field: message`, joined with `; ` */
  reason: string;
}

export interface ResourceSnapshot {
  gatewayClasses: GatewayClass[];
  gateways: Gateway[];
  listenerSets: ListenerSet[];
  httpRoutes: HTTPRoute[];
  grpcRoutes: GRPCRoute[];
  tlsRoutes: TLSRoute[];
  tcpRoutes: TCPRoute[];
  udpRoutes: UDPRoute[];
  referenceGrants: ReferenceGrant[];
  services: Service[];
  endpointSlices: EndpointSlice[];
  namespaces: Namespace[];
  secrets: Secret[];
  /** ConfigMaps holding CA bundles (`ca.crt`) that BackendTLSPolicies refer to. */
  configMaps: ConfigMap[];
  /** Cluster-scoped CA bundles that caCertificateRefs may name (GEP-5075). */
  clusterTrustBundles: ClusterTrustBundle[];
  backendTlsPolicies: BackendTLSPolicy[];
  dataPlaneProxies: DataPlaneProxy[];
  /** Portico's AccessPolicies (src/translate/portico-policies.ts attaches them). */
  accessPolicies: AccessPolicy[];
  clientTrafficPolicies: ClientTrafficPolicy[];
  rateLimitPolicies: RateLimitPolicy[];
  unusable: UnusableObject[];
  /**
   * The Gateway API CRDs the cluster has installed, with their bundle versions (the Kubernetes provider reads
   * them); absent where there are none to read (standalone mode) or they could not be read.
   */
  installedCrds?: InstalledCrds;
  /**
   * A hint, not data: how the route lists came to be, step by step from earlier snapshots' lists, so a
   * translator that translated one of those can redo just the routes changed since (it may ignore the hint).
   */
  routeChanges?: {
    httpRoutes: readonly ListChange<HTTPRoute>[];
    grpcRoutes: readonly ListChange<GRPCRoute>[];
  };
}

/** One step of a list: `to` is `from` with `removed` taken out and `added` put in (an edited object is both). */
export interface ListChange<T> {
  from: readonly T[];
  to: readonly T[];
  removed: readonly T[];
  added: readonly T[];
}

export function emptySnapshot(): ResourceSnapshot {
  return {
    gatewayClasses: [],
    gateways: [],
    listenerSets: [],
    httpRoutes: [],
    grpcRoutes: [],
    tlsRoutes: [],
    tcpRoutes: [],
    udpRoutes: [],
    referenceGrants: [],
    services: [],
    endpointSlices: [],
    namespaces: [],
    secrets: [],
    configMaps: [],
    clusterTrustBundles: [],
    backendTlsPolicies: [],
    dataPlaneProxies: [],
    accessPolicies: [],
    clientTrafficPolicies: [],
    rateLimitPolicies: [],
    unusable: [],
  };
}

/** Groups objects by kind, keeping object identity (the translator memoises on it). */
export function buildSnapshot(objects: ApiObject[]): ResourceSnapshot {
  const s = emptySnapshot();
  for (const o of objects) {
    switch (o.kind) {
      case 'GatewayClass':
        s.gatewayClasses.push(o);
        break;
      case 'Gateway':
        s.gateways.push(o);
        break;
      case 'ListenerSet':
        s.listenerSets.push(o);
        break;
      case 'HTTPRoute':
        s.httpRoutes.push(o);
        break;
      case 'GRPCRoute':
        s.grpcRoutes.push(o);
        break;
      case 'TLSRoute':
        s.tlsRoutes.push(o);
        break;
      case 'TCPRoute':
        s.tcpRoutes.push(o);
        break;
      case 'UDPRoute':
        s.udpRoutes.push(o);
        break;
      case 'ReferenceGrant':
        s.referenceGrants.push(o);
        break;
      case 'Service':
        s.services.push(o);
        break;
      case 'EndpointSlice':
        s.endpointSlices.push(o);
        break;
      case 'Namespace':
        s.namespaces.push(o);
        break;
      case 'Secret':
        s.secrets.push(o);
        break;
      case 'ConfigMap':
        s.configMaps.push(o);
        break;
      case 'ClusterTrustBundle':
        s.clusterTrustBundles.push(o);
        break;
      case 'BackendTLSPolicy':
        s.backendTlsPolicies.push(o);
        break;
      case 'DataPlaneProxy':
        s.dataPlaneProxies.push(o);
        break;
      case 'AccessPolicy':
        s.accessPolicies.push(o);
        break;
      case 'ClientTrafficPolicy':
        s.clientTrafficPolicies.push(o);
        break;
      case 'RateLimitPolicy':
        s.rateLimitPolicies.push(o);
        break;
    }
  }
  return s;
}

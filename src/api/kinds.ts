// Every kind the API layer knows: its apiVersions, schema and scope. The one table to extend for a new kind.
import type { TSchema } from '@sinclair/typebox';
import { type AccessPolicy, AccessPolicySchema } from './access-policy.js';
import { type BackendTLSPolicy, BackendTLSPolicySchema } from './backend-tls-policy.js';
import { type ClientTrafficPolicy, ClientTrafficPolicySchema } from './client-traffic-policy.js';
import {
  CERTIFICATES_GROUP,
  type ClusterTrustBundle,
  ClusterTrustBundleSchema,
  type ConfigMap,
  ConfigMapSchema,
  type EndpointSlice,
  EndpointSliceSchema,
  type Namespace,
  NamespaceSchema,
  type Secret,
  SecretSchema,
  type Service,
  ServiceSchema,
} from './core.js';
import { type DataPlaneProxy, DataPlaneProxySchema, PORTICO_GROUP } from './data-plane-proxy.js';
import { type Gateway, GatewaySchema } from './gateway.js';
import {
  GATEWAY_API_GROUP,
  GATEWAY_API_VERSIONS,
  type GatewayClass,
  GatewayClassSchema,
} from './gateway-class.js';
import { type GRPCRoute, GRPCRouteSchema } from './grpc-route.js';
import { type HTTPRoute, HTTPRouteSchema } from './http-route.js';
import {
  type TCPRoute,
  TCPRouteSchema,
  type TLSRoute,
  TLSRouteSchema,
  type UDPRoute,
  UDPRouteSchema,
} from './layer4-routes.js';
import { type ListenerSet, ListenerSetSchema } from './listener-set.js';
import { type RateLimitPolicy, RateLimitPolicySchema } from './rate-limit-policy.js';
import { type ReferenceGrant, ReferenceGrantSchema } from './reference-grant.js';

export type ApiObject =
  | GatewayClass
  | Gateway
  | ListenerSet
  | HTTPRoute
  | GRPCRoute
  | TLSRoute
  | TCPRoute
  | UDPRoute
  | ReferenceGrant
  | Service
  | EndpointSlice
  | Namespace
  | Secret
  | ConfigMap
  | ClusterTrustBundle
  | BackendTLSPolicy
  | DataPlaneProxy
  | AccessPolicy
  | ClientTrafficPolicy
  | RateLimitPolicy;

export type ApiKind = ApiObject['kind'];

export interface KindInfo {
  apiVersions: readonly string[];
  schema: TSchema;
  namespaced: boolean;
}

export const KINDS: Record<ApiKind, KindInfo> = {
  GatewayClass: { apiVersions: GATEWAY_API_VERSIONS, schema: GatewayClassSchema, namespaced: false },
  Gateway: { apiVersions: GATEWAY_API_VERSIONS, schema: GatewaySchema, namespaced: true },
  // Standard (v1) since Gateway API v1.5; the experimental XListenerSet is another kind.
  ListenerSet: { apiVersions: [`${GATEWAY_API_GROUP}/v1`], schema: ListenerSetSchema, namespaced: true },
  HTTPRoute: { apiVersions: GATEWAY_API_VERSIONS, schema: HTTPRouteSchema, namespaced: true },
  // Served as v1 only since Gateway API v1.2.
  GRPCRoute: { apiVersions: [`${GATEWAY_API_GROUP}/v1`], schema: GRPCRouteSchema, namespaced: true },
  // Standard (v1) since Gateway API v1.5 (TLSRoute) and v1.6 (TCPRoute, UDPRoute); the alpha versions are not read.
  TLSRoute: { apiVersions: [`${GATEWAY_API_GROUP}/v1`], schema: TLSRouteSchema, namespaced: true },
  TCPRoute: { apiVersions: [`${GATEWAY_API_GROUP}/v1`], schema: TCPRouteSchema, namespaced: true },
  UDPRoute: { apiVersions: [`${GATEWAY_API_GROUP}/v1`], schema: UDPRouteSchema, namespaced: true },
  ReferenceGrant: { apiVersions: GATEWAY_API_VERSIONS, schema: ReferenceGrantSchema, namespaced: true },
  Service: { apiVersions: ['v1'], schema: ServiceSchema, namespaced: true },
  EndpointSlice: { apiVersions: ['discovery.k8s.io/v1'], schema: EndpointSliceSchema, namespaced: true },
  Namespace: { apiVersions: ['v1'], schema: NamespaceSchema, namespaced: false },
  Secret: { apiVersions: ['v1'], schema: SecretSchema, namespaced: true },
  ConfigMap: { apiVersions: ['v1'], schema: ConfigMapSchema, namespaced: true },
  // v1beta1 is what Kubernetes v1.36 serves (when enabled); v1alpha1 before, v1 from v1.37: the same fields.
  ClusterTrustBundle: {
    apiVersions: ['v1alpha1', 'v1beta1', 'v1'].map((v) => `${CERTIFICATES_GROUP}/${v}`),
    schema: ClusterTrustBundleSchema,
    namespaced: false,
  },
  BackendTLSPolicy: {
    apiVersions: [`${GATEWAY_API_GROUP}/v1`],
    schema: BackendTLSPolicySchema,
    namespaced: true,
  },
  DataPlaneProxy: {
    apiVersions: [`${PORTICO_GROUP}/v1alpha1`],
    schema: DataPlaneProxySchema,
    namespaced: true,
  },
  AccessPolicy: {
    apiVersions: [`${PORTICO_GROUP}/v1alpha1`],
    schema: AccessPolicySchema,
    namespaced: true,
  },
  ClientTrafficPolicy: {
    apiVersions: [`${PORTICO_GROUP}/v1alpha1`],
    schema: ClientTrafficPolicySchema,
    namespaced: true,
  },
  RateLimitPolicy: {
    apiVersions: [`${PORTICO_GROUP}/v1alpha1`],
    schema: RateLimitPolicySchema,
    namespaced: true,
  },
};

export function isApiKind(kind: string): kind is ApiKind {
  return Object.hasOwn(KINDS, kind);
}

/** `Gateway default/eg`, `GatewayClass eg` */
export function objectId(kind: string, name: string | undefined, namespace?: string): string {
  const n = name ?? '<unnamed>';
  return namespace === undefined ? `${kind} ${n}` : `${kind} ${namespace}/${n}`;
}

export function describeObject(o: ApiObject): string {
  return objectId(o.kind, o.metadata.name, o.metadata.namespace);
}

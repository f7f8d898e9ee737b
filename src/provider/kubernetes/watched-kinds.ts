// The kinds the Kubernetes provider watches, with their API paths and what counts as a real change.
import type { JsonObject } from './api-client.js';
import { configMapEssentials } from './config-map-essentials.js';
import {
  CREDENTIALS_LABEL_SELECTOR,
  credentialSecretEssentials,
  secretEssentials,
  TLS_SECRET_FIELD_SELECTOR,
} from './secret-essentials.js';

export interface WatchedKind {
  kind: string;
  apiVersion: string;
  resource: string;
  namespaced: boolean;
  /** Our own status writes come back as events; for these kinds status is not an input, so ignore it. */
  statusIsOutput: boolean;
  /** A CRD a cluster may lack (older Gateway API installs): its absence is no objects, not a failed start. */
  mayBeAbsent?: boolean;
  /** Lists and watches only the objects this field selector matches. */
  fieldSelector?: string;
  /** What is kept of each object, before anything else sees it (the rest is neither stored nor compared). */
  essentials?: (raw: JsonObject) => JsonObject;
  /**
   * A second list and watch of the kind, by label, whose objects come first: an object both return is seen as
   * this one keeps it.
   */
  labelledWatch?: { labelSelector: string; essentials: (raw: JsonObject) => JsonObject };
}

export const WATCHED_KINDS: readonly WatchedKind[] = [
  {
    kind: 'GatewayClass',
    apiVersion: 'gateway.networking.k8s.io/v1',
    resource: 'gatewayclasses',
    namespaced: false,
    statusIsOutput: true,
  },
  {
    kind: 'Gateway',
    apiVersion: 'gateway.networking.k8s.io/v1',
    resource: 'gateways',
    namespaced: true,
    statusIsOutput: true,
  },
  {
    kind: 'ListenerSet',
    apiVersion: 'gateway.networking.k8s.io/v1',
    resource: 'listenersets',
    namespaced: true,
    statusIsOutput: true,
    // Standard since Gateway API v1.5: a cluster with older CRDs has none.
    mayBeAbsent: true,
  },
  {
    kind: 'HTTPRoute',
    apiVersion: 'gateway.networking.k8s.io/v1',
    resource: 'httproutes',
    namespaced: true,
    statusIsOutput: true,
  },
  {
    kind: 'GRPCRoute',
    apiVersion: 'gateway.networking.k8s.io/v1',
    resource: 'grpcroutes',
    namespaced: true,
    statusIsOutput: true,
    mayBeAbsent: true,
  },
  // Layer-4 routes, Standard since Gateway API v1.5 (TLSRoute) and v1.6 (TCPRoute, UDPRoute).
  ...(['TLSRoute', 'TCPRoute', 'UDPRoute'] as const).map(
    (kind): WatchedKind => ({
      kind,
      apiVersion: 'gateway.networking.k8s.io/v1',
      resource: `${kind.toLowerCase()}s`,
      namespaced: true,
      statusIsOutput: true,
      mayBeAbsent: true,
    }),
  ),
  {
    kind: 'ReferenceGrant',
    apiVersion: 'gateway.networking.k8s.io/v1beta1',
    resource: 'referencegrants',
    namespaced: true,
    statusIsOutput: true,
  },
  { kind: 'Service', apiVersion: 'v1', resource: 'services', namespaced: true, statusIsOutput: false },
  {
    kind: 'EndpointSlice',
    apiVersion: 'discovery.k8s.io/v1',
    resource: 'endpointslices',
    namespaced: true,
    statusIsOutput: false,
  },
  { kind: 'Namespace', apiVersion: 'v1', resource: 'namespaces', namespaced: false, statusIsOutput: true },
  {
    kind: 'Secret',
    apiVersion: 'v1',
    resource: 'secrets',
    namespaced: true,
    statusIsOutput: false,
    fieldSelector: TLS_SECRET_FIELD_SELECTOR,
    essentials: secretEssentials,
    labelledWatch: { labelSelector: CREDENTIALS_LABEL_SELECTOR, essentials: credentialSecretEssentials },
  },
  {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    resource: 'configmaps',
    namespaced: true,
    statusIsOutput: false,
    essentials: configMapEssentials,
  },
  {
    kind: 'ClusterTrustBundle',
    apiVersion: 'certificates.k8s.io/v1beta1',
    resource: 'clustertrustbundles',
    namespaced: false,
    statusIsOutput: false,
    // Beta and off by default in Kubernetes v1.36: served only where the API server enables it.
    mayBeAbsent: true,
  },
  {
    kind: 'BackendTLSPolicy',
    apiVersion: 'gateway.networking.k8s.io/v1',
    resource: 'backendtlspolicies',
    namespaced: true,
    statusIsOutput: true,
    mayBeAbsent: true,
  },
  {
    kind: 'DataPlaneProxy',
    apiVersion: 'gateway.portico.io/v1alpha1',
    resource: 'dataplaneproxies',
    namespaced: true,
    statusIsOutput: true,
  },
  {
    kind: 'AccessPolicy',
    apiVersion: 'gateway.portico.io/v1alpha1',
    resource: 'accesspolicies',
    namespaced: true,
    statusIsOutput: true,
    mayBeAbsent: true,
  },
  {
    kind: 'ClientTrafficPolicy',
    apiVersion: 'gateway.portico.io/v1alpha1',
    resource: 'clienttrafficpolicies',
    namespaced: true,
    statusIsOutput: true,
    mayBeAbsent: true,
  },
  {
    kind: 'RateLimitPolicy',
    apiVersion: 'gateway.portico.io/v1alpha1',
    resource: 'ratelimitpolicies',
    namespaced: true,
    statusIsOutput: true,
    mayBeAbsent: true,
  },
];

/** `/api/v1[/namespaces/NS]/RESOURCE` or `/apis/GROUP/VERSION[/namespaces/NS]/RESOURCE`. */
export function collectionPath(apiVersion: string, resource: string, namespace?: string): string {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return namespace === undefined ? `${base}/${resource}` : `${base}/namespaces/${namespace}/${resource}`;
}

export function objectPath(apiVersion: string, resource: string, name: string, namespace?: string): string {
  return `${collectionPath(apiVersion, resource, namespace)}/${encodeURIComponent(name)}`;
}

/** The object without what changes on every write (resourceVersion, managedFields) and, for outputs, status. */
export function fingerprint(kind: WatchedKind, raw: JsonObject): string {
  const { metadata, status, ...rest } = raw;
  const { resourceVersion: _rv, managedFields: _mf, ...meta } = (metadata ?? {}) as JsonObject;
  return JSON.stringify(kind.statusIsOutput ? { ...rest, meta } : { ...rest, meta, status });
}

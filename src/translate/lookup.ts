// Indexes over a snapshot, built once per translation: every lookup the rules need is a map access.
import type { ClusterTrustBundle, ConfigMap, EndpointSlice, Secret, Service } from '../api/core.js';
import type { DataPlaneProxy } from '../api/data-plane-proxy.js';
import { clusterTrustBundlesServed } from '../api/gateway-api-bundle.js';
import { objectId } from '../api/kinds.js';
import type { ReferenceGrant } from '../api/reference-grant.js';
import type { ResourceSnapshot } from '../api/snapshot.js';
import { type BackendTlsIndex, indexBackendTlsPolicies } from './backend-tls.js';
import { byNsName, nsName } from './object-order.js';

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

export interface SnapshotLookup {
  namespaceLabels: Map<string, Record<string, string>>;
  services: Map<string, Service>;
  /** `ns/service` → its EndpointSlices, sorted by name. */
  slices: Map<string, EndpointSlice[]>;
  secrets: Map<string, Secret>;
  /** ConfigMaps (their `ca.crt`) by `ns/name`: CA bundles for client certificate validation. */
  configMaps: Map<string, ConfigMap>;
  /** ClusterTrustBundles by name; undefined when the cluster does not serve the kind. */
  clusterTrustBundles: Map<string, ClusterTrustBundle> | undefined;
  grantsByNamespace: Map<string, ReferenceGrant[]>;
  dataPlaneProxies: Map<string, DataPlaneProxy>;
  /** BackendTLSPolicies by the Service (port) they hold, and each policy's verdict. */
  backendTls: BackendTlsIndex;
  /** `Kind ns/name` → why the provider could not use that object. */
  unusable: Map<string, string>;
}

/** The snapshot lists a lookup is built from; the same lists (by identity) give the same lookup. */
export function lookupInputs(s: ResourceSnapshot): readonly unknown[] {
  return [
    s.namespaces,
    s.services,
    s.endpointSlices,
    s.secrets,
    s.referenceGrants,
    s.dataPlaneProxies,
    s.unusable,
    s.configMaps,
    s.backendTlsPolicies,
    s.clusterTrustBundles,
    clusterTrustBundlesServed(s.installedCrds),
  ];
}

export function buildLookup(s: ResourceSnapshot): SnapshotLookup {
  const configMaps = new Map(s.configMaps.map((c) => [nsName(c), c]));
  const clusterTrustBundles = clusterTrustBundlesServed(s.installedCrds)
    ? new Map(s.clusterTrustBundles.map((b) => [b.metadata.name, b]))
    : undefined;
  const l: SnapshotLookup = {
    namespaceLabels: new Map(),
    services: new Map(),
    slices: new Map(),
    secrets: new Map(),
    configMaps,
    clusterTrustBundles,
    grantsByNamespace: new Map(),
    dataPlaneProxies: new Map(),
    backendTls: indexBackendTlsPolicies(s.backendTlsPolicies, { configMaps, clusterTrustBundles }),
    unusable: new Map(),
  };
  for (const n of s.namespaces) l.namespaceLabels.set(n.metadata.name, n.metadata.labels ?? {});
  for (const svc of s.services) l.services.set(nsName(svc), svc);
  for (const sec of s.secrets) l.secrets.set(nsName(sec), sec);
  for (const d of s.dataPlaneProxies) l.dataPlaneProxies.set(nsName(d), d);
  for (const u of s.unusable) l.unusable.set(objectId(u.kind, u.name, u.namespace), u.reason);
  for (const g of s.referenceGrants) {
    const ns = g.metadata.namespace ?? '';
    const list = l.grantsByNamespace.get(ns);
    if (list === undefined) l.grantsByNamespace.set(ns, [g]);
    else list.push(g);
  }
  for (const slice of s.endpointSlices) {
    const service = slice.metadata.labels?.[SERVICE_NAME_LABEL];
    if (service === undefined) continue;
    const key = `${slice.metadata.namespace ?? ''}/${service}`;
    const list = l.slices.get(key);
    if (list === undefined) l.slices.set(key, [slice]);
    else list.push(slice);
  }
  // Sorting the small per-key lists keeps results independent of input order at little cost.
  for (const list of l.grantsByNamespace.values()) list.sort(byNsName);
  for (const list of l.slices.values()) list.sort(byNsName);
  return l;
}

/** `Kind ns/name not found`, or, for an object the provider received and cannot use, why. */
export function notFound(l: SnapshotLookup, kind: string, namespace: string, name: string): string {
  const id = objectId(kind, name, namespace);
  const reason = l.unusable.get(id);
  return reason === undefined ? `${id} not found` : `${id} cannot be used: ${reason}`;
}

export interface GrantRequest {
  fromGroup: string;
  fromKind: string;
  fromNamespace: string;
  toGroup: string;
  toKind: string;
  toNamespace: string;
  toName: string;
}

/** Does a ReferenceGrant in the target namespace allow this cross-namespace reference? */
export function referenceGranted(l: SnapshotLookup, r: GrantRequest): boolean {
  if (r.fromNamespace === r.toNamespace) return true;
  for (const g of l.grantsByNamespace.get(r.toNamespace) ?? []) {
    const fromOk = g.spec.from.some(
      (f) => f.group === r.fromGroup && f.kind === r.fromKind && f.namespace === r.fromNamespace,
    );
    if (!fromOk) continue;
    const toOk = g.spec.to.some(
      (t) => t.group === r.toGroup && t.kind === r.toKind && (t.name === undefined || t.name === r.toName),
    );
    if (toOk) return true;
  }
  return false;
}

// The Gateway API CRD bundle this build is made for, and what a cluster has installed of it. Every Gateway API
// CRD carries its release as the annotation `gateway.networking.k8s.io/bundle-version`.

/** The release of the Gateway API standard CRDs this build reads, ships in its chart and is conformance-tested on. */
export const GATEWAY_API_BUNDLE_VERSION = 'v1.7.0';
export const BUNDLE_VERSION_ANNOTATION = 'gateway.networking.k8s.io/bundle-version';
/** `standard` or `experimental`: the experimental channel's CRDs keep the fields of experimental features. */
export const CHANNEL_ANNOTATION = 'gateway.networking.k8s.io/channel';

/** The Gateway API CRDs Portico reads (plural names in gateway.networking.k8s.io), in a stable order. */
export const READ_GATEWAY_API_CRDS = [
  'gatewayclasses',
  'gateways',
  'listenersets',
  'httproutes',
  'grpcroutes',
  'referencegrants',
] as const;

/**
 * What the cluster has installed of the CRDs Portico reads, as last read: each plural name → its bundle-version
 * annotation ('' when the CRD has none), or null when the CRD is not installed.
 */
export interface InstalledCrds {
  versions: Readonly<Record<string, string | null>>;
  /** Each installed CRD's channel annotation ('' when it has none). */
  channels?: Readonly<Record<string, string>>;
  /**
   * Whether the API server serves ClusterTrustBundles (certificates.k8s.io/v1beta1, off by default in Kubernetes
   * v1.36): a built-in kind, not a CRD, but like them what this cluster offers. Absent: not known, taken as served.
   */
  clusterTrustBundles?: boolean;
}

/** Whether caCertificateRefs may name a ClusterTrustBundle here (standalone, or a cluster serving the kind). */
export function clusterTrustBundlesServed(installed: InstalledCrds | undefined): boolean {
  return installed?.clusterTrustBundles !== false;
}

/**
 * Whether the Gateway CRD keeps the experimental fields Portico reads (spec.addresses[].routability, listener
 * filters). Unknown (standalone, where Portico validates the files itself, or CRDs not yet read): it does.
 */
export function experimentalGateways(installed: InstalledCrds | undefined): boolean {
  return installed?.channels === undefined || installed.channels.gateways === 'experimental';
}

/** `v1.7.0` → [1, 7]; undefined for anything that is not a release version. */
export function bundleMinor(version: string): [number, number] | undefined {
  const m = /^v(\d+)\.(\d+)\.\d+$/.exec(version);
  return m === null ? undefined : [Number(m[1]), Number(m[2])];
}

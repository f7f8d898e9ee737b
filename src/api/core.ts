// The core Kubernetes kinds the translator reads: Service, EndpointSlice, Namespace, Secret, ConfigMap,
// ClusterTrustBundle.
import { type Static, Type } from '@sinclair/typebox';
import { Enum, ObjectMetaSchema, Unimplemented } from './common.js';

export const ServicePortSchema = Type.Object({
  name: Type.Optional(Type.String()),
  protocol: Enum(['TCP', 'UDP', 'SCTP'] as const, { default: 'TCP' }),
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  targetPort: Type.Optional(
    Type.Union([Type.Integer({ minimum: 1, maximum: 65535 }), Type.String({ minLength: 1 })]),
  ),
  appProtocol: Type.Optional(Type.String()),
  nodePort: Unimplemented(),
});

export const ServiceSchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('Service'),
  metadata: ObjectMetaSchema,
  spec: Type.Object(
    {
      type: Type.String({ default: 'ClusterIP' }),
      ports: Type.Array(ServicePortSchema, { default: [] }),
      selector: Type.Optional(Type.Record(Type.String(), Type.String())),
      clusterIP: Type.Optional(Type.String()),
      allocateLoadBalancerNodePorts: Unimplemented(),
      clusterIPs: Unimplemented(),
      externalIPs: Unimplemented(),
      externalName: Unimplemented(),
      externalTrafficPolicy: Unimplemented(),
      healthCheckNodePort: Unimplemented(),
      internalTrafficPolicy: Unimplemented(),
      ipFamilies: Unimplemented(),
      ipFamilyPolicy: Unimplemented(),
      loadBalancerClass: Unimplemented(),
      loadBalancerIP: Unimplemented(),
      loadBalancerSourceRanges: Unimplemented(),
      publishNotReadyAddresses: Unimplemented(),
      sessionAffinity: Unimplemented(),
      sessionAffinityConfig: Unimplemented(),
      trafficDistribution: Unimplemented(),
    },
    { default: {} },
  ),
  status: Unimplemented(),
});
export type Service = Static<typeof ServiceSchema>;

export const EndpointSliceSchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('EndpointSlice'),
  metadata: ObjectMetaSchema,
  addressType: Enum(['IPv4', 'IPv6', 'FQDN'] as const),
  endpoints: Type.Array(
    Type.Object({
      addresses: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
      // Absent `ready` means ready (the EndpointSlice API says unknown state is to be treated as ready).
      conditions: Type.Object(
        {
          ready: Type.Optional(Type.Boolean()),
          serving: Type.Optional(Type.Boolean()),
          terminating: Type.Optional(Type.Boolean()),
        },
        { default: {} },
      ),
      nodeName: Type.Optional(Type.String()),
      zone: Type.Optional(Type.String()),
      hostname: Unimplemented(),
      targetRef: Unimplemented(),
      hints: Unimplemented(),
      deprecatedTopology: Unimplemented(),
    }),
    { default: [] },
  ),
  ports: Type.Array(
    Type.Object({
      name: Type.String({ default: '' }),
      port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
      protocol: Type.String({ default: 'TCP' }),
      appProtocol: Type.Optional(Type.String()),
    }),
    { default: [] },
  ),
});
export type EndpointSlice = Static<typeof EndpointSliceSchema>;

export const NamespaceSchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('Namespace'),
  metadata: ObjectMetaSchema,
  spec: Unimplemented(),
  status: Unimplemented(),
});
export type Namespace = Static<typeof NamespaceSchema>;

export const SecretSchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('Secret'),
  metadata: ObjectMetaSchema,
  type: Type.String({ default: 'Opaque' }),
  /** Base64-encoded values, as the API server stores them. */
  data: Type.Record(Type.String(), Type.String(), { default: {} }),
  /** Plain values; merged into data (over it) as the API server does on write. */
  stringData: Type.Optional(Type.Record(Type.String(), Type.String())),
  immutable: Unimplemented(),
});
export type Secret = Static<typeof SecretSchema>;

export const ConfigMapSchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('ConfigMap'),
  metadata: ObjectMetaSchema,
  /** Plain values (a BackendTLSPolicy's CA bundle is `ca.crt`). */
  data: Type.Record(Type.String(), Type.String(), { default: {} }),
  binaryData: Unimplemented(),
  immutable: Unimplemented(),
});
export type ConfigMap = Static<typeof ConfigMapSchema>;

/** The certificates.k8s.io group: ClusterTrustBundle (beta in Kubernetes v1.36, served only when enabled). */
export const CERTIFICATES_GROUP = 'certificates.k8s.io';

/** A cluster-scoped bundle of CA certificates (GEP-5075 lets caCertificateRefs name one). */
export const ClusterTrustBundleSchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('ClusterTrustBundle'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    /** Informational here: the bundle is used by name, whoever signs with it. */
    signerName: Type.Optional(Type.String()),
    /** PEM CA certificates, concatenated. */
    trustBundle: Type.String(),
  }),
});
export type ClusterTrustBundle = Static<typeof ClusterTrustBundleSchema>;

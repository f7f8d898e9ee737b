// Gateway (gateway.networking.k8s.io/v1): listeners on ports, with TLS and the routes they admit.
import { type Static, Type } from '@sinclair/typebox';
import {
  ConditionSchema,
  Enum,
  HOSTNAME_PATTERN,
  LabelSelectorSchema,
  LocalObjectReferenceSchema,
  ObjectMetaSchema,
  ObjectReferenceSchema,
  Unimplemented,
} from './common.js';
import { ExternalAuthFilterSchema } from './http-route.js';

export const SecretObjectReferenceSchema = Type.Object({
  group: Type.String({ default: '' }),
  kind: Type.String({ default: 'Secret' }),
  name: Type.String({ minLength: 1 }),
  namespace: Type.Optional(Type.String({ minLength: 1 })),
});

/** A client certificate check of an HTTPS listener's port (Gateway `spec.tls.frontend`). */
const FrontendTLSConfigSchema = Type.Object({
  validation: Type.Optional(
    Type.Object({
      // ObjectReference: a ConfigMap with `ca.crt` (Core); a namespace needs a ReferenceGrant.
      caCertificateRefs: Type.Array(ObjectReferenceSchema, { minItems: 1, maxItems: 16 }),
      mode: Enum(['AllowValidOnly', 'AllowInsecureFallback'] as const, { default: 'AllowValidOnly' }),
    }),
  ),
});
export type FrontendTLSConfig = Static<typeof FrontendTLSConfigSchema>;

export const FrontendTLSSchema = Type.Object({
  default: FrontendTLSConfigSchema,
  perPort: Type.Array(
    Type.Object({ port: Type.Integer({ minimum: 1, maximum: 65535 }), tls: FrontendTLSConfigSchema }),
    { maxItems: 64, default: [] },
  ),
});
export type FrontendTLS = Static<typeof FrontendTLSSchema>;

export const RouteGroupKindSchema = Type.Object({
  group: Type.String({ default: 'gateway.networking.k8s.io' }),
  kind: Type.String({ minLength: 1 }),
});
export type RouteGroupKind = Static<typeof RouteGroupKindSchema>;

/**
 * One pre-routing filter of a listener (Gateway API v1.7 experimental, GEP-5224): it runs on every request the
 * listener accepts, in list order, before route matching. The CEL rules pairing `type` with its field are
 * checked by the translator (listener-filters.ts), so standalone files are held to them too.
 */
export const ListenerFilterSchema = Type.Object({
  type: Enum(['ExternalAuth', 'ExtensionRef'] as const),
  externalAuth: Type.Optional(ExternalAuthFilterSchema),
  extensionRef: Type.Optional(LocalObjectReferenceSchema),
});
export type ListenerFilter = Static<typeof ListenerFilterSchema>;

export const ListenerSchema = Type.Object({
  name: Type.String({
    minLength: 1,
    maxLength: 253,
    pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
  }),
  hostname: Type.Optional(Type.String({ minLength: 1, maxLength: 253, pattern: HOSTNAME_PATTERN })),
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  protocol: Type.String({ minLength: 1, maxLength: 255 }),
  tls: Type.Optional(
    Type.Object({
      mode: Enum(['Terminate', 'Passthrough'] as const, { default: 'Terminate' }),
      certificateRefs: Type.Array(SecretObjectReferenceSchema, { maxItems: 64, default: [] }),
      options: Type.Optional(Type.Record(Type.String(), Type.String())),
      frontendValidation: Unimplemented(),
    }),
  ),
  allowedRoutes: Type.Object(
    {
      namespaces: Type.Object(
        {
          from: Enum(['All', 'Same', 'Selector'] as const, { default: 'Same' }),
          selector: Type.Optional(LabelSelectorSchema),
        },
        { default: {} },
      ),
      kinds: Type.Optional(Type.Array(RouteGroupKindSchema, { maxItems: 8 })),
    },
    { default: {} },
  ),
  // Only on HTTP and HTTPS listeners (the CRD's CEL rule; checked by the translator).
  filters: Type.Optional(
    Type.Object({ requests: Type.Optional(Type.Array(ListenerFilterSchema, { maxItems: 16 })) }),
  ),
});
export type Listener = Static<typeof ListenerSchema>;

/**
 * Where an address is reachable from (Gateway API v1.7 experimental, GEP-5093): empty (no promise), `Cluster` (a
 * Service cluster IP) or `prefix/path` with a DNS-subdomain prefix other than k8s.io and its subdomains, as the
 * CRD's CEL rule says.
 */
export const ROUTABILITY_PATTERN =
  '^$|^Cluster$|^(?!([a-z0-9]([-a-z0-9]*[a-z0-9])?\\.)*k8s\\.io/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/.+$';

export const GatewayStatusAddressSchema = Type.Object({
  type: Type.String({ default: 'IPAddress' }),
  value: Type.String(),
  routability: Type.Optional(Type.String()),
});

export const ListenerStatusSchema = Type.Object({
  name: Type.String(),
  supportedKinds: Type.Array(Type.Object({ group: Type.String(), kind: Type.String() })),
  attachedRoutes: Type.Integer(),
  conditions: Type.Array(ConditionSchema),
});
export type ListenerStatus = Static<typeof ListenerStatusSchema>;

export const GatewayStatusSchema = Type.Object({
  addresses: Type.Optional(Type.Array(GatewayStatusAddressSchema)),
  conditions: Type.Optional(Type.Array(ConditionSchema)),
  listeners: Type.Optional(Type.Array(ListenerStatusSchema)),
  attachedListenerSets: Type.Optional(Type.Integer()),
});
export type GatewayStatus = Static<typeof GatewayStatusSchema>;

/** What a Gateway asks of the infrastructure made for it: metadata to carry, and (unsupported) parameters. */
export const GatewayInfrastructureSchema = Type.Object({
  labels: Type.Optional(Type.Record(Type.String(), Type.String())),
  annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
  parametersRef: Type.Optional(
    Type.Object({ group: Type.String(), kind: Type.String(), name: Type.String({ minLength: 1 }) }),
  ),
});

export const GatewaySchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('Gateway'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    gatewayClassName: Type.String({ minLength: 1, maxLength: 253 }),
    listeners: Type.Array(ListenerSchema, { minItems: 1, maxItems: 64 }),
    // The CRD lets `value` be left out: a request for any address of the type.
    addresses: Type.Optional(
      Type.Array(
        Type.Object({
          type: Type.Optional(Type.String()),
          value: Type.Optional(Type.String()),
          routability: Type.Optional(
            Type.String({
              maxLength: 253,
              pattern: ROUTABILITY_PATTERN,
              patternMeaning:
                'must be empty, Cluster, or prefix/path with a DNS-subdomain prefix other than k8s.io and its subdomains',
            }),
          ),
        }),
        { maxItems: 16 },
      ),
    ),
    infrastructure: Type.Optional(GatewayInfrastructureSchema),
    // Which namespaces' ListenerSets may add listeners to this Gateway; absent or None: none may.
    allowedListeners: Type.Optional(
      Type.Object({
        namespaces: Type.Object(
          {
            from: Enum(['All', 'Selector', 'Same', 'None'] as const, { default: 'None' }),
            selector: Type.Optional(LabelSelectorSchema),
          },
          { default: {} },
        ),
      }),
    ),
    tls: Type.Optional(
      Type.Object({
        backend: Type.Optional(
          Type.Object({ clientCertificateRef: Type.Optional(SecretObjectReferenceSchema) }),
        ),
        frontend: Type.Optional(FrontendTLSSchema),
      }),
    ),
    backendTLS: Unimplemented(),
  }),
  // Written by controllers, never read by the translator: kept as is, not validated (API clients hand out Dates).
  status: Type.Optional(Type.Unknown()),
});
export type Gateway = Static<typeof GatewaySchema>;

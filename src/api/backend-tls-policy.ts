// BackendTLSPolicy (gateway.networking.k8s.io/v1): how a Gateway connects to a Service's port over TLS.
import { type Static, Type } from '@sinclair/typebox';
import {
  Enum,
  HOSTNAME_PATTERN,
  LocalObjectReferenceSchema,
  ObjectMetaSchema,
  Unimplemented,
} from './common.js';

/** A hostname without a wildcard (PreciseHostname). */
const PRECISE_HOSTNAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

export const BackendTLSPolicySchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('BackendTLSPolicy'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    targetRefs: Type.Array(
      Type.Object({
        group: Type.String({ maxLength: 253 }),
        kind: Type.String({ minLength: 1, maxLength: 63 }),
        name: Type.String({ minLength: 1, maxLength: 253 }),
        sectionName: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
      }),
      { minItems: 1, maxItems: 16 },
    ),
    validation: Type.Object({
      caCertificateRefs: Type.Optional(Type.Array(LocalObjectReferenceSchema, { maxItems: 8 })),
      wellKnownCACertificates: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
      hostname: Type.String({ minLength: 1, maxLength: 253, pattern: PRECISE_HOSTNAME_PATTERN }),
      subjectAltNames: Type.Optional(
        Type.Array(
          Type.Object({
            type: Enum(['Hostname', 'URI'] as const),
            hostname: Type.Optional(Type.String({ maxLength: 253, pattern: `^$|${HOSTNAME_PATTERN}` })),
            uri: Type.Optional(Type.String({ maxLength: 253 })),
          }),
          { maxItems: 5 },
        ),
      ),
    }),
    options: Type.Optional(Type.Record(Type.String(), Type.String())),
  }),
  status: Unimplemented(),
});
export type BackendTLSPolicy = Static<typeof BackendTLSPolicySchema>;

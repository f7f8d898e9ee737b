// ReferenceGrant (gateway.networking.k8s.io/v1beta1 and v1): lets objects in other namespaces refer into this one.
import { type Static, Type } from '@sinclair/typebox';
import { ObjectMetaSchema } from './common.js';

export const ReferenceGrantSchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('ReferenceGrant'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    from: Type.Array(
      Type.Object({
        group: Type.String(),
        kind: Type.String({ minLength: 1 }),
        namespace: Type.String({ minLength: 1 }),
      }),
      { minItems: 1, maxItems: 16 },
    ),
    to: Type.Array(
      Type.Object({
        group: Type.String(),
        kind: Type.String({ minLength: 1 }),
        name: Type.Optional(Type.String({ minLength: 1 })),
      }),
      { minItems: 1, maxItems: 16 },
    ),
  }),
});
export type ReferenceGrant = Static<typeof ReferenceGrantSchema>;

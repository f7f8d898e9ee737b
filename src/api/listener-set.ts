// ListenerSet (gateway.networking.k8s.io/v1, Standard since v1.5): listeners a team adds to a Gateway it does not
// own, in its own namespace, with its own certificates; the Gateway's spec.allowedListeners decides who may.
import { type Static, Type } from '@sinclair/typebox';
import { ObjectMetaSchema } from './common.js';
import { ListenerSchema } from './gateway.js';
import { GATEWAY_API_GROUP } from './gateway-class.js';

export const ParentGatewayReferenceSchema = Type.Object({
  group: Type.String({ default: GATEWAY_API_GROUP }),
  kind: Type.String({ default: 'Gateway' }),
  name: Type.String({ minLength: 1, maxLength: 253 }),
  namespace: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
});

export const ListenerSetSchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('ListenerSet'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    parentRef: ParentGatewayReferenceSchema,
    // A ListenerEntry has a Gateway listener's fields, `filters` (experimental) among them.
    listeners: Type.Array(ListenerSchema, { minItems: 1, maxItems: 64 }),
  }),
  // Written by controllers, never read by the translator.
  status: Type.Optional(Type.Unknown()),
});
export type ListenerSet = Static<typeof ListenerSetSchema>;

// GatewayClass (gateway.networking.k8s.io/v1, cluster-scoped): which controller serves a class of Gateways.
import { type Static, Type } from '@sinclair/typebox';
import { ObjectMetaSchema } from './common.js';

export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';
export const GATEWAY_API_VERSIONS = [`${GATEWAY_API_GROUP}/v1`, `${GATEWAY_API_GROUP}/v1beta1`] as const;

export const ParametersReferenceSchema = Type.Object({
  group: Type.String(),
  kind: Type.String({ minLength: 1 }),
  name: Type.String({ minLength: 1 }),
  namespace: Type.Optional(Type.String({ minLength: 1 })),
});

export const GatewayClassSchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('GatewayClass'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    controllerName: Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: "^[a-z0-9.-]+/[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+$",
    }),
    parametersRef: Type.Optional(ParametersReferenceSchema),
    description: Type.Optional(Type.String()),
  }),
  // Written by controllers, never read by the translator: kept as is, not validated (API clients hand out Dates).
  status: Type.Optional(Type.Unknown()),
});
export type GatewayClass = Static<typeof GatewayClassSchema>;

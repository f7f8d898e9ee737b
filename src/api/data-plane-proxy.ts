// DataPlaneProxy (gateway.portico.io/v1alpha1, namespaced): parameters a GatewayClass gives its proxy fleets.
import { type Static, Type } from '@sinclair/typebox';
import { ObjectMetaSchema, Unimplemented } from './common.js';

export const PORTICO_GROUP = 'gateway.portico.io';

export const DataPlaneProxySchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('DataPlaneProxy'),
  metadata: ObjectMetaSchema,
  spec: Type.Object(
    {
      // One shared fleet (one Service, one address) for every Gateway of the class.
      mergeGateways: Type.Boolean({ default: false }),
      // Worker processes per proxy; absent: the CPUs its container may use.
      workers: Type.Optional(Type.Integer({ minimum: 1, maximum: 1024 })),
    },
    { default: {} },
  ),
  status: Unimplemented(),
});
export type DataPlaneProxy = Static<typeof DataPlaneProxySchema>;

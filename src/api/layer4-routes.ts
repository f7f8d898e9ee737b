// TLSRoute (v1 since Gateway API v1.5), TCPRoute and UDPRoute (v1 since v1.6): layer-4 routes with no matches
// beyond a TLSRoute's SNI hostnames, one rule of weighted backends each.
import { type Static, Type } from '@sinclair/typebox';
import { HOSTNAME_PATTERN, ObjectMetaSchema } from './common.js';
import { BACKEND_REF_FIELDS, ParentReferenceSchema } from './http-route.js';

const Layer4RuleSchema = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
  backendRefs: Type.Array(Type.Object(BACKEND_REF_FIELDS), { minItems: 1, maxItems: 16 }),
});
export type Layer4Rule = Static<typeof Layer4RuleSchema>;

const PARENT_REFS = Type.Array(ParentReferenceSchema, { maxItems: 32, default: [] });
// The CRDs admit exactly one rule per layer-4 route.
const RULES = Type.Array(Layer4RuleSchema, { minItems: 1, maxItems: 1 });
// Written by controllers, never read by the translator: kept as is, not validated.
const STATUS = Type.Optional(Type.Unknown());

export const TLSRouteSchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('TLSRoute'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    parentRefs: PARENT_REFS,
    // The SNI names the route serves (required in v1).
    hostnames: Type.Array(Type.String({ minLength: 1, maxLength: 253, pattern: HOSTNAME_PATTERN }), {
      minItems: 1,
      maxItems: 1024,
    }),
    rules: RULES,
  }),
  status: STATUS,
});
export type TLSRoute = Static<typeof TLSRouteSchema>;

/** A TCPRoute or UDPRoute: no hostnames on the wire, so every such route serves any host. */
function hostlessRouteSchema<const K extends 'TCPRoute' | 'UDPRoute'>(kind: K) {
  return Type.Object({
    apiVersion: Type.String(),
    kind: Type.Literal(kind),
    metadata: ObjectMetaSchema,
    spec: Type.Object({
      parentRefs: PARENT_REFS,
      // The translator's attachment reads this list: always empty here.
      hostnames: Type.Array(Type.String(), { maxItems: 0, default: [] }),
      rules: RULES,
    }),
    status: STATUS,
  });
}

export const TCPRouteSchema = hostlessRouteSchema('TCPRoute');
export type TCPRoute = Static<typeof TCPRouteSchema>;

export const UDPRouteSchema = hostlessRouteSchema('UDPRoute');
export type UDPRoute = Static<typeof UDPRouteSchema>;

export type Layer4Route = TLSRoute | TCPRoute | UDPRoute;

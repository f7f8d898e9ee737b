// GRPCRoute (gateway.networking.k8s.io/v1): gRPC service/method and header matching rules that forward to backends.
import { type Static, Type } from '@sinclair/typebox';
import { Enum, ObjectMetaSchema, Unimplemented } from './common.js';
import {
  BACKEND_REF_FIELDS,
  HeaderModifierSchema,
  HeaderNameSchema,
  RequestMirrorSchema,
  ROUTE_SPEC_FIELDS,
} from './http-route.js';

export const GRPCMethodMatchSchema = Type.Object({
  type: Enum(['Exact', 'RegularExpression'] as const, { default: 'Exact' }),
  service: Type.Optional(Type.String({ maxLength: 1024 })),
  method: Type.Optional(Type.String({ maxLength: 1024 })),
});
export type GRPCMethodMatch = Static<typeof GRPCMethodMatchSchema>;

export const GRPCRouteMatchSchema = Type.Object({
  method: Type.Optional(GRPCMethodMatchSchema),
  headers: Type.Array(
    Type.Object({
      type: Enum(['Exact', 'RegularExpression'] as const, { default: 'Exact' }),
      name: HeaderNameSchema,
      value: Type.String({ minLength: 1, maxLength: 4096 }),
    }),
    { maxItems: 16, default: [] },
  ),
});
export type GRPCRouteMatch = Static<typeof GRPCRouteMatchSchema>;

export const GRPCRouteFilterSchema = Type.Object({
  type: Enum(['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestMirror', 'ExtensionRef'] as const),
  requestHeaderModifier: Type.Optional(HeaderModifierSchema),
  responseHeaderModifier: Type.Optional(HeaderModifierSchema),
  requestMirror: Type.Optional(RequestMirrorSchema),
  // Filter types the translator reports as not supported.
  extensionRef: Unimplemented(),
});
export type GRPCRouteFilter = Static<typeof GRPCRouteFilterSchema>;

export const GRPCBackendRefSchema = Type.Object({
  ...BACKEND_REF_FIELDS,
  filters: Type.Array(GRPCRouteFilterSchema, { maxItems: 16, default: [] }),
});

export const GRPCRouteRuleSchema = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
  // No matches: the rule matches every gRPC request.
  matches: Type.Array(GRPCRouteMatchSchema, { maxItems: 8, default: [] }),
  filters: Type.Array(GRPCRouteFilterSchema, { maxItems: 16, default: [] }),
  backendRefs: Type.Array(GRPCBackendRefSchema, { maxItems: 16, default: [] }),
  sessionPersistence: Unimplemented(),
});
export type GRPCRouteRule = Static<typeof GRPCRouteRuleSchema>;

export const GRPCRouteSchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('GRPCRoute'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    ...ROUTE_SPEC_FIELDS,
    rules: Type.Array(GRPCRouteRuleSchema, { maxItems: 16, default: [] }),
  }),
  // Written by controllers, never read by the translator: kept as is, not validated (API clients hand out Dates).
  status: Type.Optional(Type.Unknown()),
});
export type GRPCRoute = Static<typeof GRPCRouteSchema>;

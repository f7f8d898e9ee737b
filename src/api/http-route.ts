// HTTPRoute (gateway.networking.k8s.io/v1): host and request matching rules that forward to backends.
import { type Static, Type } from '@sinclair/typebox';
import { ConditionSchema, Enum, HOSTNAME_PATTERN, ObjectMetaSchema, Unimplemented } from './common.js';

export const ParentReferenceSchema = Type.Object({
  group: Type.String({ default: 'gateway.networking.k8s.io' }),
  kind: Type.String({ default: 'Gateway' }),
  namespace: Type.Optional(Type.String({ minLength: 1 })),
  name: Type.String({ minLength: 1 }),
  sectionName: Type.Optional(Type.String({ minLength: 1 })),
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
});
export type ParentReference = Static<typeof ParentReferenceSchema>;

export const HeaderNameSchema = Type.String({
  minLength: 1,
  maxLength: 256,
  pattern: "^[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$",
});
const HeaderValueSchema = Type.Object({ name: HeaderNameSchema, value: Type.String({ maxLength: 4096 }) });

export const HeaderModifierSchema = Type.Object({
  set: Type.Array(HeaderValueSchema, { maxItems: 16, default: [] }),
  add: Type.Array(HeaderValueSchema, { maxItems: 16, default: [] }),
  // The CRD takes any string here; a name no request header can have removes nothing.
  remove: Type.Array(Type.String(), { maxItems: 16, default: [] }),
});

export const PathModifierSchema = Type.Object({
  type: Enum(['ReplaceFullPath', 'ReplacePrefixMatch'] as const),
  replaceFullPath: Type.Optional(Type.String({ maxLength: 1024 })),
  replacePrefixMatch: Type.Optional(Type.String({ maxLength: 1024 })),
});

const HTTP_METHODS = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
] as const;

/** The CRD's CORSOrigin pattern: `*`, or http(s)://host[:port] with a `*` or `*.` host allowed. */
const CORS_ORIGIN_PATTERN =
  '(^\\*$)|(^(http(s)?):\\/\\/(((\\*\\.)?([a-zA-Z0-9\\-]+\\.)*[a-zA-Z0-9-]+|\\*)(:([0-9]{1,5}))?)$)';

export const CORSFilterSchema = Type.Object({
  allowOrigins: Type.Array(Type.String({ minLength: 1, maxLength: 253, pattern: CORS_ORIGIN_PATTERN }), {
    maxItems: 64,
    default: [],
  }),
  allowCredentials: Type.Optional(Type.Boolean()),
  allowMethods: Type.Array(Enum([...HTTP_METHODS, '*'] as const), { maxItems: 9, default: [] }),
  allowHeaders: Type.Array(HeaderNameSchema, { maxItems: 64, default: [] }),
  exposeHeaders: Type.Array(HeaderNameSchema, { maxItems: 64, default: [] }),
  maxAge: Type.Integer({ minimum: 1, maximum: 2_147_483_647, default: 5 }),
});
export type CORSFilter = Static<typeof CORSFilterSchema>;

/** A Service (or other kind, reported unsupported) that a filter names: BackendObjectReference. */
export const BackendObjectReferenceSchema = Type.Object({
  group: Type.String({ default: '' }),
  kind: Type.String({ default: 'Service' }),
  name: Type.String({ minLength: 1, maxLength: 253 }),
  namespace: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
});

/** RequestMirror: a copy of each request (or of `percent` / `fraction` of them) to another backend. */
export const RequestMirrorSchema = Type.Object({
  backendRef: BackendObjectReferenceSchema,
  percent: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
  fraction: Type.Optional(
    Type.Object({
      numerator: Type.Integer({ minimum: 0, maximum: 2_147_483_647 }),
      denominator: Type.Integer({ minimum: 1, maximum: 2_147_483_647, default: 100 }),
    }),
  ),
});
export type RequestMirror = Static<typeof RequestMirrorSchema>;

/** The CRD's HTTPAuthConfig.path pattern (a path prefix for the authorization request). */
const AUTH_PATH_PATTERN = "^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$";

/** Gateway API v1.7 experimental `HTTPExternalAuthFilter` (feature HTTPRouteExternalAuth). */
export const ExternalAuthFilterSchema = Type.Object({
  protocol: Enum(['HTTP', 'GRPC'] as const),
  backendRef: BackendObjectReferenceSchema,
  grpc: Type.Optional(
    Type.Object({ allowedHeaders: Type.Array(HeaderNameSchema, { maxItems: 64, default: [] }) }),
  ),
  http: Type.Optional(
    Type.Object({
      path: Type.Optional(Type.String({ maxLength: 1024, pattern: AUTH_PATH_PATTERN })),
      allowedHeaders: Type.Array(HeaderNameSchema, { maxItems: 64, default: [] }),
      allowedResponseHeaders: Type.Array(HeaderNameSchema, { maxItems: 64, default: [] }),
    }),
  ),
  forwardBody: Type.Optional(
    Type.Object({ maxSize: Type.Integer({ minimum: 0, maximum: 2_147_483_647, default: 0 }) }),
  ),
});
export type ExternalAuthFilter = Static<typeof ExternalAuthFilterSchema>;

export const HTTPRouteFilterSchema = Type.Object({
  // Any string the CRD admits; the translator reports types it does not implement.
  type: Type.String({ minLength: 1 }),
  requestHeaderModifier: Type.Optional(HeaderModifierSchema),
  responseHeaderModifier: Type.Optional(HeaderModifierSchema),
  requestRedirect: Type.Optional(
    Type.Object({
      scheme: Type.Optional(Enum(['http', 'https'] as const)),
      hostname: Type.Optional(Type.String({ pattern: HOSTNAME_PATTERN })),
      path: Type.Optional(PathModifierSchema),
      port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
      statusCode: Type.Union(
        [Type.Literal(301), Type.Literal(302), Type.Literal(303), Type.Literal(307), Type.Literal(308)],
        { default: 302 },
      ),
    }),
  ),
  urlRewrite: Type.Optional(
    Type.Object({
      hostname: Type.Optional(Type.String({ pattern: HOSTNAME_PATTERN })),
      path: Type.Optional(PathModifierSchema),
    }),
  ),
  requestMirror: Type.Optional(RequestMirrorSchema),
  // Filter types the translator reports as not supported.
  extensionRef: Unimplemented(),
  cors: Type.Optional(CORSFilterSchema),
  externalAuth: Type.Optional(ExternalAuthFilterSchema),
});
export type HTTPRouteFilter = Static<typeof HTTPRouteFilterSchema>;

/** The fields of a weighted backend reference, shared by HTTPRoute and GRPCRoute (each adds its filters). */
export const BACKEND_REF_FIELDS = {
  group: Type.String({ default: '' }),
  kind: Type.String({ default: 'Service' }),
  name: Type.String({ minLength: 1 }),
  namespace: Type.Optional(Type.String({ minLength: 1 })),
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  weight: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 1 }),
};

export const BackendRefSchema = Type.Object({
  ...BACKEND_REF_FIELDS,
  filters: Type.Array(HTTPRouteFilterSchema, { maxItems: 16, default: [] }),
});
export type BackendRef = Static<typeof BackendRefSchema>;

export const HTTPRouteMatchSchema = Type.Object({
  path: Type.Object(
    {
      type: Enum(['Exact', 'PathPrefix', 'RegularExpression'] as const, { default: 'PathPrefix' }),
      value: Type.String({ maxLength: 1024, default: '/' }),
    },
    { default: {} },
  ),
  headers: Type.Array(
    Type.Object({
      type: Enum(['Exact', 'RegularExpression'] as const, { default: 'Exact' }),
      name: HeaderNameSchema,
      value: Type.String({ maxLength: 4096 }),
    }),
    { maxItems: 16, default: [] },
  ),
  queryParams: Type.Array(
    Type.Object({
      type: Enum(['Exact', 'RegularExpression'] as const, { default: 'Exact' }),
      name: Type.String({ minLength: 1, maxLength: 256 }),
      value: Type.String({ maxLength: 1024 }),
    }),
    { maxItems: 16, default: [] },
  ),
  method: Type.Optional(Enum(HTTP_METHODS)),
});
export type HTTPRouteMatch = Static<typeof HTTPRouteMatchSchema>;

/** Gateway API Duration: up to four `<number><unit>` parts, units h, m, s, ms. */
export const DURATION_PATTERN = '^([0-9]{1,5}(h|m|s|ms)){1,4}$';

export const HTTPRouteRuleSchema = Type.Object({
  name: Type.Optional(Type.String()),
  matches: Type.Array(HTTPRouteMatchSchema, {
    maxItems: 64,
    default: [{ path: { type: 'PathPrefix', value: '/' } }],
  }),
  filters: Type.Array(HTTPRouteFilterSchema, { maxItems: 16, default: [] }),
  backendRefs: Type.Array(BackendRefSchema, { maxItems: 16, default: [] }),
  timeouts: Type.Optional(
    Type.Object({
      request: Type.Optional(Type.String({ pattern: DURATION_PATTERN })),
      backendRequest: Type.Optional(Type.String({ pattern: DURATION_PATTERN })),
    }),
  ),
  retry: Type.Optional(
    Type.Object({
      codes: Type.Array(Type.Integer({ minimum: 400, maximum: 599 }), { maxItems: 200, default: [] }),
      attempts: Type.Integer({ minimum: 0, default: 1 }),
      backoff: Type.Optional(Type.String({ pattern: DURATION_PATTERN })),
    }),
  ),
  sessionPersistence: Unimplemented(),
});
export type HTTPRouteRule = Static<typeof HTTPRouteRuleSchema>;

export const RouteParentStatusSchema = Type.Object({
  parentRef: ParentReferenceSchema,
  controllerName: Type.String(),
  conditions: Type.Array(ConditionSchema),
});
export type RouteParentStatus = Static<typeof RouteParentStatusSchema>;

/** What every route kind's spec has besides its rules: where it attaches and for which hostnames. */
export const ROUTE_SPEC_FIELDS = {
  parentRefs: Type.Array(ParentReferenceSchema, { maxItems: 32, default: [] }),
  hostnames: Type.Array(Type.String({ minLength: 1, maxLength: 253, pattern: HOSTNAME_PATTERN }), {
    maxItems: 16,
    default: [],
  }),
  useDefaultGateways: Unimplemented(),
};

export const HTTPRouteSchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('HTTPRoute'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    ...ROUTE_SPEC_FIELDS,
    rules: Type.Array(HTTPRouteRuleSchema, { maxItems: 16, default: [{}] }),
  }),
  // Written by controllers, never read by the translator: kept as is, not validated (API clients hand out Dates).
  status: Type.Optional(Type.Unknown()),
});
export type HTTPRoute = Static<typeof HTTPRouteSchema>;

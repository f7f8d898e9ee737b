// DataPlaneProxy (gateway.portico.io/v1alpha1, namespaced): parameters a GatewayClass gives its proxy fleets.
import { type Static, Type } from '@sinclair/typebox';
import { Enum, ObjectMetaSchema, Unimplemented } from './common.js';
import { FleetShapeSchema } from './fleet-shape.js';

export const PORTICO_GROUP = 'gateway.portico.io';

/** A query parameter name as a client sends it: unreserved characters and percent-escapes (no `&`, `=`, `,`). */
const QUERY_NAME_PATTERN = '^[A-Za-z0-9._~%-]+$';

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
      // How long a stopping proxy waits for requests in flight; absent: 60 (PROXY_MAX_DRAIN_SECONDS).
      drainSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
      // The fleet's Kubernetes objects: workload, autoscaler, disruption budget, pod, container, Service.
      kubernetes: Type.Optional(FleetShapeSchema),
      // The proxies' own log lines; absent: info.
      logLevel: Type.Optional(Enum(['debug', 'info', 'warn', 'error'] as const)),
      telemetry: Type.Optional(
        Type.Object({
          // One line per request on the proxy's stdout; absent: on, JSON, every field, every request. No field
          // has a schema default, so a Gateway's DataPlaneProxy overrides only what it sets (proxy-parameters.ts).
          accessLog: Type.Optional(
            Type.Object({
              // Absent: false.
              disabled: Type.Optional(Type.Boolean()),
              // Absent: JSON.
              format: Type.Optional(Type.Union([Type.Literal('JSON'), Type.Literal('Text')])),
              // Field names are checked by the translator against the proxy's list (src/ir/access-log.ts).
              fields: Type.Optional(Type.Array(Type.String(), { minItems: 1, maxItems: 32 })),
              // Percent of requests logged; absent: 100.
              sampling: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
              // Query parameters whose values a line shows as REDACTED (tokens, keys); absent: none.
              redactQueryParameters: Type.Optional(
                Type.Array(Type.String({ minLength: 1, maxLength: 128, pattern: QUERY_NAME_PATTERN }), {
                  maxItems: 32,
                }),
              ),
            }),
          ),
          // W3C trace context and spans by OTLP/HTTP; absent: off. The endpoint is checked by the translator.
          tracing: Type.Optional(
            Type.Object({
              endpoint: Type.String({ minLength: 1, maxLength: 2048 }),
              // Percent of the traces the proxies start that are sampled; absent: 100.
              sampling: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
            }),
          ),
        }),
      ),
    },
    { default: {} },
  ),
  status: Unimplemented(),
});
export type DataPlaneProxy = Static<typeof DataPlaneProxySchema>;

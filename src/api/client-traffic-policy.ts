// ClientTrafficPolicy (gateway.portico.io/v1alpha1, namespaced): how a listener meets its clients — who the real
// client is behind load balancers, the PROXY protocol, request and connection limits (docs/limits.md). Its one
// route field is the body limit.
import { type Static, Type } from '@sinclair/typebox';
import { ObjectMetaSchema, Unimplemented } from './common.js';
import { DURATION_PATTERN } from './http-route.js';
import {
  CIDR_PATTERN,
  HEADER_NAME_PATTERN,
  PolicyTargetRefsSchema,
  policyTargetErrors,
} from './policy-target.js';
import type { FieldError } from './schema-errors.js';

const CidrsSchema = (description: string) =>
  Type.Array(Type.String({ minLength: 3, maxLength: 43, pattern: CIDR_PATTERN }), {
    minItems: 1,
    maxItems: 64,
    description,
  });

export const ClientIpSchema = Type.Object(
  {
    trustedCIDRs: CidrsSchema(
      'Peers (and, walking x-forwarded-for from the right, hops) whose forwarding headers are believed.',
    ),
    trustedHops: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 64,
        description:
          'The client is this many entries from the right of x-forwarded-for (1: the one the trusted peer appended); absent: the rightmost entry not in trustedCIDRs.',
      }),
    ),
    header: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        pattern: HEADER_NAME_PATTERN,
        description:
          "A header a trusted peer sets to the client's address (a CDN's), read instead of x-forwarded-for.",
      }),
    ),
  },
  {
    description:
      'Who the client is behind load balancers and CDNs: the access log, rate-limit keys and access rules read it. Absent: the peer, whatever it sends.',
  },
);

export const ProxyProtocolSchema = Type.Object(
  {
    trustedCIDRs: CidrsSchema('Peers allowed to connect at all: every connection must come from one.'),
    timeout: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        description: 'The whole header must arrive within this (a Gateway API duration); default 5s.',
      }),
    ),
  },
  {
    description:
      'Every connection starts with a PROXY protocol v1 or v2 header naming the client; anything else is closed.',
  },
);

export const ClientLimitsSchema = Type.Object(
  {
    maxRequestBodyBytes: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'A larger body gets 413 (content-length and while streaming); 0: no limit.',
      }),
    ),
    maxHeaderBytes: Type.Optional(
      Type.Integer({ minimum: 1024, maximum: 1048576, description: 'A larger request head gets 431.' }),
    ),
    maxHeaders: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10000, description: 'More request headers get 431.' }),
    ),
    maxConnections: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1000000,
        description: 'Connections open at once, per proxy worker; more are closed at accept.',
      }),
    ),
    maxUdpFlows: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1000000,
        description:
          'UDP listeners: client flows at once, per proxy worker; a new client past it is dropped (default 8192).',
      }),
    ),
    udpFlowIdleTimeout: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        description: 'UDP listeners: a flow with no datagram either way for this long ends (default 60s).',
      }),
    ),
    maxClientHelloBytes: Type.Optional(
      Type.Integer({
        minimum: 512,
        maximum: 1048576,
        description:
          'TLS listeners: a larger ClientHello closes the connection before any routing (default 16384).',
      }),
    ),
    tlsHandshakeTimeout: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        description:
          'HTTPS and TLS listeners: the TLS handshake (on a TLS listener, the ClientHello read before it too) must finish within this, else the connection is closed (default 10s).',
      }),
    ),
    headerTimeout: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        description: 'The whole request head must arrive within this.',
      }),
    ),
    idleTimeout: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        description: 'An idle keep-alive connection is closed after this.',
      }),
    ),
  },
  {
    description:
      "Request and connection limits; an absent field keeps the proxy's built-in default. On a route or rule target only maxRequestBodyBytes may be set.",
  },
);

export const ClientTrafficPolicySchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('ClientTrafficPolicy'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    targetRefs: PolicyTargetRefsSchema,
    clientIP: Type.Optional(ClientIpSchema),
    proxyProtocol: Type.Optional(ProxyProtocolSchema),
    limits: Type.Optional(ClientLimitsSchema),
  }),
  status: Unimplemented(),
});
export type ClientTrafficPolicy = Static<typeof ClientTrafficPolicySchema>;

const ROUTE_KINDS: readonly string[] = ['HTTPRoute', 'GRPCRoute'];

/** The ClientTrafficPolicy CRD's CEL rules, for files and `portico translate` too. */
export function clientTrafficPolicyErrors(p: ClientTrafficPolicy): FieldError[] {
  const errors = policyTargetErrors(p.spec.targetRefs);
  const ip = p.spec.clientIP;
  if (ip?.trustedHops !== undefined && ip.header !== undefined)
    errors.push({ path: ['spec', 'clientIP'], message: 'set at most one of trustedHops and header' });
  if (p.spec.targetRefs.some((t) => ROUTE_KINDS.includes(t.kind))) {
    const socket = Object.keys(p.spec.limits ?? {}).filter((k) => k !== 'maxRequestBodyBytes');
    if (p.spec.clientIP !== undefined || p.spec.proxyProtocol !== undefined || socket.length > 0)
      errors.push({
        path: ['spec'],
        message: 'a policy targeting a route may set only limits.maxRequestBodyBytes',
      });
  }
  return errors;
}

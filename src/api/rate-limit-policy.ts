// RateLimitPolicy (gateway.portico.io/v1alpha1, namespaced): requests per period per key, on the routes and rules
// it targets (or, targeting a Gateway or listener, on their routes without one of their own); per proxy (Local) or
// across a fleet through a Redis named as a Service (Global). docs/limits.md says exactly how a limit holds.
import { type Static, Type } from '@sinclair/typebox';
import { Enum, ObjectMetaSchema, Unimplemented } from './common.js';
import { DURATION_PATTERN } from './http-route.js';
import {
  HEADER_NAME_PATTERN,
  PolicyTargetRefsSchema,
  policyTargetErrors,
  SecretRefSchema,
} from './policy-target.js';
import type { FieldError } from './schema-errors.js';

/** Whole seconds, minutes or hours (`1s`, `1m`, `1h30m`): a window is counted in seconds. */
export const PERIOD_PATTERN = '^([0-9]{1,5}(h|m|s)){1,3}$';
/** The longest period (the proxy's limit, a day). */
export const MAX_PERIOD_SECONDS = 86_400;

export const RateLimitKeySchema = Type.Object({
  type: Enum(['ClientIp', 'Header', 'Path', 'Claim'] as const, {
    description:
      "What the bucket counts: the client address (the listener's ClientTrafficPolicy decides it), a header's value, the path, or a claim of the verified JWT.",
  }),
  name: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'The header (Header) or claim (Claim) name; only for those.',
    }),
  ),
});

export const RateLimitRuleSchema = Type.Object({
  name: Type.String({
    minLength: 1,
    maxLength: 63,
    pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
    description: 'Names the rule in metrics (`rule` label), the access log and RateLimit headers.',
  }),
  keys: Type.Optional(
    Type.Array(RateLimitKeySchema, {
      maxItems: 4,
      description: 'One bucket per distinct tuple of these; absent or empty: one bucket for every request.',
    }),
  ),
  requests: Type.Integer({ minimum: 1, maximum: 1000000000, description: 'Requests allowed per period.' }),
  period: Type.String({
    pattern: PERIOD_PATTERN,
    description: 'The period, whole seconds from 1s to 24h (`1s`, `1m`, `1h`).',
  }),
  scope: Type.Optional(
    Enum(['Local', 'Global'] as const, {
      description:
        'Local (the default): per proxy, across its workers. Global: every proxy sharing spec.redis.',
    }),
  ),
});

export const RedisSchema = Type.Object(
  {
    serviceRef: Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 253 }),
        namespace: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
        port: Type.Integer({ minimum: 1, maximum: 65535 }),
      },
      {
        description:
          'The Redis Service (another namespace needs a ReferenceGrant): its cluster IP, or with none (standalone, headless) its one ready endpoint.',
      },
    ),
    passwordSecretRef: Type.Optional(
      Type.Object(SecretRefSchema.properties, {
        description: "A Secret whose key `password` is Redis's AUTH password.",
      }),
    ),
    tls: Type.Optional(
      Type.Object(
        {
          caSecretRef: Type.Optional(
            Type.Object(SecretRefSchema.properties, {
              description:
                "A Secret whose key `ca.crt` (PEM) the server's chain must lead to; absent: the system CAs.",
            }),
          ),
          serverName: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 253,
              description: 'Sent as SNI and checked in the certificate; default `<service>.<namespace>.svc`.',
            }),
          ),
        },
        { description: 'Speak TLS to Redis.' },
      ),
    ),
    failureMode: Type.Optional(
      Enum(['Open', 'Closed'] as const, {
        description: 'Redis slow or down: Open (the default) lets requests through, Closed answers 429.',
      }),
    ),
    timeout: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        description: 'A lease Redis does not answer within this is a failure (default 100ms).',
      }),
    ),
  },
  { description: 'The Redis Global rules count in; required when a rule is Global.' },
);

export const RateLimitPolicySchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('RateLimitPolicy'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    targetRefs: PolicyTargetRefsSchema,
    rules: Type.Array(RateLimitRuleSchema, {
      minItems: 1,
      maxItems: 16,
      description: 'Checked in order; the first without a token answers 429.',
    }),
    redis: Type.Optional(RedisSchema),
  }),
  status: Unimplemented(),
});
export type RateLimitPolicy = Static<typeof RateLimitPolicySchema>;

/** A period's whole seconds, or undefined when it is not whole seconds in 1s..24h. */
export function periodSeconds(period: string): number | undefined {
  if (!new RegExp(PERIOD_PATTERN).test(period)) return undefined;
  let seconds = 0;
  for (const m of period.matchAll(/([0-9]+)(h|m|s)/g))
    seconds += Number(m[1]) * (m[2] === 'h' ? 3600 : m[2] === 'm' ? 60 : 1);
  return seconds >= 1 && seconds <= MAX_PERIOD_SECONDS ? seconds : undefined;
}

/** The RateLimitPolicy CRD's CEL rules, for files and `portico translate` too. */
export function rateLimitPolicyErrors(p: RateLimitPolicy): FieldError[] {
  const errors = policyTargetErrors(p.spec.targetRefs);
  const names = new Map<string, number>();
  p.spec.rules.forEach((r, i) => {
    const at = ['spec', 'rules', i];
    const first = names.get(r.name);
    if (first !== undefined)
      errors.push({ path: [...at, 'name'], message: `duplicates rules[${first}].name` });
    else names.set(r.name, i);
    if (periodSeconds(r.period) === undefined)
      errors.push({ path: [...at, 'period'], message: 'must be from 1s to 24h' });
    if (r.scope === 'Global' && p.spec.redis === undefined)
      errors.push({ path: ['spec', 'redis'], message: `required: rules[${i}] is Global` });
    (r.keys ?? []).forEach((k, j) => {
      const named = k.type === 'Header' || k.type === 'Claim';
      if (named !== (k.name !== undefined))
        errors.push({
          path: [...at, 'keys', j, 'name'],
          message: 'required for Header and Claim, and only then',
        });
      else if (k.type === 'Header' && !new RegExp(HEADER_NAME_PATTERN).test(k.name ?? ''))
        errors.push({ path: [...at, 'keys', j, 'name'], message: 'must be a header name' });
    });
  });
  return errors;
}

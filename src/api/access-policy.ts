// AccessPolicy (gateway.portico.io/v1alpha1, namespaced): who may pass the Gateways, listeners, routes or rules it
// targets. The mechanisms run in a fixed order (authentication first, then the access rules); see docs/access.md.
import { type Static, Type } from '@sinclair/typebox';
import { Enum, ObjectMetaSchema, Unimplemented } from './common.js';
import { DURATION_PATTERN, ExternalAuthFilterSchema } from './http-route.js';
import { PolicyTargetRefsSchema, policyTargetErrors } from './policy-target.js';
import type { FieldError } from './schema-errors.js';

const ACTIONS = ['Allow', 'Deny'] as const;
/** A lower-case HTTP field name (RFC 9110 token). */
const HEADER_NAME_PATTERN = "^[a-z0-9!#$%&'*+.^_`|~-]+$";
/** An IPv4 or IPv6 prefix; the translator checks the address itself. */
const CIDR_PATTERN = '^[0-9a-fA-F:.]+/[0-9]{1,3}$';

export const AccessRuleSchema = Type.Object({
  name: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 63,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      description: 'Names the rule in the access log and metrics (`rule` label); absent: `rule-<index>`.',
    }),
  ),
  action: Enum(ACTIONS, { description: 'What a request the rule matches gets.' }),
  clientCIDRs: Type.Optional(
    Type.Array(Type.String({ minLength: 3, maxLength: 43, pattern: CIDR_PATTERN }), {
      minItems: 1,
      maxItems: 64,
      description: "Matches when the client's address is in one of these prefixes (IPv4 or IPv6).",
    }),
  ),
  methods: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 32, pattern: '^[A-Z]+$' }), {
      minItems: 1,
      maxItems: 16,
      description: "Matches when the request's method is one of these.",
    }),
  ),
  headers: Type.Optional(
    Type.Array(
      Type.Object({
        name: Type.String({ minLength: 1, maxLength: 256, pattern: HEADER_NAME_PATTERN }),
        value: Type.Optional(Type.String({ maxLength: 4096 })),
      }),
      {
        minItems: 1,
        maxItems: 16,
        description: 'Matches when every one of these headers is present (with this exact value, when set).',
      },
    ),
  ),
});
export type AccessRule = Static<typeof AccessRuleSchema>;

/**
 * An authorization service every request the policy covers is sent to first: the fields of the Gateway API
 * ExternalAuth filter (HTTP forward-auth or Envoy ext_authz v3 over gRPC), plus how long to wait and what an
 * unanswered request gets.
 */
export const AccessExternalAuthSchema = Type.Object({
  ...ExternalAuthFilterSchema.properties,
  timeout: Type.Optional(
    Type.String({
      pattern: DURATION_PATTERN,
      description:
        'How long the proxy waits for the service (a Gateway API duration, e.g. `500ms`, `5s`); default 5s.',
    }),
  ),
  failOpen: Type.Optional(
    Type.Boolean({
      description:
        'A service that cannot answer (timeout, no endpoint, an error) lets the request pass when true; refuses it (403) when false, the default.',
    }),
  ),
});
export type AccessExternalAuth = Static<typeof AccessExternalAuthSchema>;

export const AccessPolicySchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('AccessPolicy'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    targetRefs: PolicyTargetRefsSchema,
    rules: Type.Optional(
      Type.Array(AccessRuleSchema, {
        maxItems: 64,
        description:
          'Access rules, checked after authentication; the first that matches (every field it sets) decides.',
      }),
    ),
    externalAuth: Type.Optional(AccessExternalAuthSchema),
    defaultAction: Type.Optional(
      Enum(ACTIONS, {
        description:
          'What a request no rule matches gets. Required with rules: an allow-list and a deny-list differ only here.',
      }),
    ),
  }),
  status: Unimplemented(),
});
export type AccessPolicy = Static<typeof AccessPolicySchema>;

/** The AccessPolicy CRD's CEL rules, for files and `portico translate` too. */
export function accessPolicyErrors(p: AccessPolicy): FieldError[] {
  const errors = policyTargetErrors(p.spec.targetRefs);
  const rules = p.spec.rules ?? [];
  if (rules.length > 0 && p.spec.defaultAction === undefined)
    errors.push({ path: ['spec', 'defaultAction'], message: 'required when rules are given' });
  const names = new Map<string, number>();
  rules.forEach((r, i) => {
    if (r.name === undefined) return;
    const first = names.get(r.name);
    if (first !== undefined)
      errors.push({ path: ['spec', 'rules', i, 'name'], message: `duplicates rules[${first}].name` });
    else names.set(r.name, i);
  });
  return errors;
}

// What every Portico policy kind shares: the targetRefs of policy attachment (GEP-713), same namespace as the policy.
import { Type } from '@sinclair/typebox';
import { Enum } from './common.js';
import type { FieldError } from './schema-errors.js';

/** The kinds a Portico policy may target, all of group gateway.networking.k8s.io. */
export const POLICY_TARGET_KINDS = ['Gateway', 'ListenerSet', 'HTTPRoute', 'GRPCRoute'] as const;
export type PolicyTargetKind = (typeof POLICY_TARGET_KINDS)[number];

/** An HTTP field name (RFC 9110 token), any case: the translator lower-cases it. */
export const HEADER_NAME_PATTERN = "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$";
/** An IPv4 or IPv6 prefix; the translator checks the address itself. */
export const CIDR_PATTERN = '^[0-9a-fA-F:.]+/[0-9]{1,3}$';

/** A Secret a policy reads, in its namespace unless `namespace` says (then a ReferenceGrant must allow it). */
export const SecretRefSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 253 }),
  namespace: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
});

export const PolicyTargetRefSchema = Type.Object({
  group: Type.Literal('gateway.networking.k8s.io'),
  kind: Enum(POLICY_TARGET_KINDS),
  name: Type.String({ minLength: 1, maxLength: 253 }),
  sectionName: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      description:
        "A Gateway's or ListenerSet's listener, or a route's named rule; absent: the whole object.",
    }),
  ),
});

export const PolicyTargetRefsSchema = Type.Array(PolicyTargetRefSchema, {
  minItems: 1,
  maxItems: 16,
  description:
    "What the policy applies to, in the policy's namespace. The most specific holder wins whole: a route rule, its route, a ListenerSet listener, its ListenerSet, a Gateway listener, its Gateway.",
});

export interface PolicyTargetRef {
  group: string;
  kind: PolicyTargetKind;
  name: string;
  sectionName?: string;
}

/** The rule a policy CRD's CEL enforces on targetRefs: no target twice. */
export function policyTargetErrors(refs: readonly PolicyTargetRef[]): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Map<string, number>();
  refs.forEach((t, i) => {
    const key = `${t.kind}|${t.name}|${t.sectionName ?? ''}`;
    const first = seen.get(key);
    if (first !== undefined)
      errors.push({ path: ['spec', 'targetRefs', i], message: `duplicates targetRefs[${first}]` });
    else seen.set(key, i);
  });
  return errors;
}

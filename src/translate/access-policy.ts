// An AccessPolicy's fleet resource: what the proxy checks (src/proxy/access/), and why it cannot be honoured.
import type { AccessPolicy } from '../api/access-policy.js';
import { PORTICO_GROUP } from '../api/data-plane-proxy.js';
import { durationMs } from '../api/semantic-rules.js';
import type { ExternalAuthorization } from '../ir/external-auth.js';
import { cidrProblem, timeoutProblem } from '../ir/field-rules.js';
import { type AccessPolicyConfig, type AccessRuleConfig, fleetPolicyName } from '../ir/fleet-config.js';
import { serviceOf } from './backends.js';
import type { SnapshotLookup } from './lookup.js';
import { externalAuthorization } from './route-rules.js';

/** The policy in fleet-config terms; a value the proxy would refuse makes it `refused` (every request denied). */
export function compileAccessPolicy(
  policy: AccessPolicy,
  lookup: SnapshotLookup,
): { config: AccessPolicyConfig; problem?: string } {
  const ns = policy.metadata.namespace ?? '';
  const problems: string[] = [];
  const rules = (policy.spec.rules ?? []).map((r, i): AccessRuleConfig => {
    const out: AccessRuleConfig = { name: r.name ?? `rule-${i}`, action: r.action };
    if (r.clientCIDRs !== undefined) {
      r.clientCIDRs.forEach((c, j) => {
        const why = cidrProblem(c);
        if (why !== undefined) problems.push(`spec.rules[${i}].clientCIDRs[${j}]: ${why}`);
      });
      out.clientCidrs = [...r.clientCIDRs];
    }
    if (r.methods !== undefined) out.methods = [...r.methods];
    if (r.headers !== undefined)
      out.headers = r.headers.map((h) =>
        h.value === undefined ? { name: h.name } : { name: h.name, value: h.value },
      );
    return out;
  });
  const externalAuth = policyExternalAuth(policy, lookup, problems);
  const config: AccessPolicyConfig = {
    name: fleetPolicyName('AccessPolicy', ns, policy.metadata.name),
    kind: 'AccessPolicy',
    rules: problems.length === 0 ? rules : [],
    defaultAction: policy.spec.defaultAction ?? 'Allow',
  };
  if (externalAuth !== undefined && problems.length === 0) config.externalAuth = externalAuth;
  if (problems.length === 0) return { config };
  const problem = problems.join('; ');
  return { config: { ...config, refused: problem }, problem };
}

/**
 * The policy's authorization service as the proxy asks it: the ExternalAuth filter's settings and checks, its
 * timeout and fail-open, and its Service resolved (a ReferenceGrant to the AccessPolicy kind for another
 * namespace's). A problem refuses the whole policy: fail closed.
 */
function policyExternalAuth(
  policy: AccessPolicy,
  lookup: SnapshotLookup,
  problems: string[],
): ExternalAuthorization | undefined {
  const spec = policy.spec.externalAuth;
  if (spec === undefined) return undefined;
  const ns = policy.metadata.namespace ?? '';
  const auth = externalAuthorization(spec, 'spec.externalAuth', ns, problems);
  if (spec.timeout !== undefined) {
    const ms = durationMs(spec.timeout);
    if (ms === undefined || ms < 1 || timeoutProblem(ms) !== undefined)
      problems.push(`spec.externalAuth.timeout: ${timeoutProblem(ms ?? 0) ?? 'must be at least 1ms'}`);
    else auth.timeoutMs = ms;
  }
  auth.failOpen = spec.failOpen === true;
  const found = serviceOf(
    spec.backendRef,
    { group: PORTICO_GROUP, kind: 'AccessPolicy', namespace: ns },
    lookup,
  );
  if ('reason' in found) problems.push(`spec.externalAuth.backendRef: ${found.message}`);
  return auth;
}

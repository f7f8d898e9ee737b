// An AccessPolicy's fleet resource: what the proxy checks (src/proxy/access/), and why it cannot be honoured.
import type { AccessPolicy } from '../api/access-policy.js';
import { cidrProblem } from '../ir/field-rules.js';
import { type AccessPolicyConfig, type AccessRuleConfig, fleetPolicyName } from '../ir/fleet-config.js';

/** The policy in fleet-config terms; a value the proxy would refuse makes it `refused` (every request denied). */
export function compileAccessPolicy(policy: AccessPolicy): { config: AccessPolicyConfig; problem?: string } {
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
  const config: AccessPolicyConfig = {
    name: fleetPolicyName('AccessPolicy', ns, policy.metadata.name),
    kind: 'AccessPolicy',
    rules: problems.length === 0 ? rules : [],
    defaultAction: policy.spec.defaultAction ?? 'Allow',
  };
  if (problems.length === 0) return { config };
  const problem = problems.join('; ');
  return { config: { ...config, refused: problem }, problem };
}

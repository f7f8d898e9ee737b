// A listener's pre-routing filters (GEP-5224) as access policies of one step each, compiled with their
// VirtualHost; routing/listener-filters.ts runs them in order before route matching.
import type { VirtualHost } from '../../ir/fleet-config.js';
import { LISTENER_FILTER_POLICY_PREFIX } from '../telemetry/metrics.js';
import { externalAuthStep } from './external-steps.js';
import type { CompiledAccessPolicy } from './pipeline.js';

/** A filter that cannot be honoured refuses everything: fail closed. */
function refusingPolicy(name: string, reason: string): CompiledAccessPolicy {
  const refusal = { allow: false, status: 403, rule: 'invalid-filter', reason } as const;
  return { name, steps: [{ check: () => refusal }], credentialQuery: [] };
}

/** The VirtualHost's filters as one-step policies, named `ListenerFilter <vhost>[<i>]` (a metrics label). */
export function listenerFilterPolicies(vhost: VirtualHost): CompiledAccessPolicy[] | undefined {
  const filters = vhost.requestFilters;
  if (filters === undefined || filters.length === 0) return undefined;
  return filters.map((f, i) => {
    const name = `${LISTENER_FILTER_POLICY_PREFIX}${vhost.name}[${i}]`;
    if (f.refused !== undefined) return refusingPolicy(name, f.refused);
    return { name, steps: [externalAuthStep(f.auth)], credentialQuery: [] };
  });
}

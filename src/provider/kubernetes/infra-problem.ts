// What a Gateway says when its fleet's infrastructure could not be applied: the API server's own reason and
// message when it refused (a quota, an admission policy), so the tenant sees why on the Gateway itself.
import { isPorticoError } from '../../platform/errors.js';
import type { InfraProblem } from '../../runner/infra-problems.js';
import { KubernetesApiError } from './api-client.js';

/** metav1.Condition's reason pattern: a Status reason that fits is used as it is. */
const CONDITION_REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

/** The problem `error` (from applying `object`) makes for the fleet's Gateways. */
export function infraProblemOf(error: unknown, object: string): InfraProblem {
  if (error instanceof KubernetesApiError) {
    const reason =
      error.reason !== undefined && CONDITION_REASON.test(error.reason)
        ? error.reason
        : error.status >= 500
          ? 'Pending'
          : 'Invalid';
    return { reason, message: error.message };
  }
  // E_KUBERNETES without an HTTP status is a request that got no answer (a timeout): Pending, below.
  if (isPorticoError(error) && error.code !== 'E_KUBERNETES')
    return { reason: 'Invalid', message: error.message };
  // No answer from the API server (a timeout, a reset): nothing was refused, the attempt is retried.
  const text = error instanceof Error ? error.message : String(error);
  return { reason: 'Pending', message: `${object}: ${text}` };
}

// Status conditions as the translator emits them: no lastTransitionTime (the status writers add it).
import type { Condition } from '../api/common.js';

/**
 * Every condition type Portico writes on a GatewayClass, a Gateway or a listener. A condition of any other type
 * there is another controller's (a policy controller, an operator): status writers keep it as they find it.
 */
export const OWN_CONDITION_TYPES: ReadonlySet<string> = new Set([
  'Accepted',
  'Programmed',
  'ResolvedRefs',
  'Conflicted',
  'SupportedVersion',
  'InsecureFrontendValidationMode',
  'AddressesAssigned',
]);

export function condition(
  type: string,
  ok: boolean,
  reason: string,
  message: string,
  generation: number,
): Condition {
  return { type, status: ok ? 'True' : 'False', reason, message, observedGeneration: generation };
}

/** A pass/fail verdict with the reason a condition reports. */
export interface Verdict {
  ok: boolean;
  reason: string;
  message: string;
}

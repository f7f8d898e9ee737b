// Status conditions as the translator emits them: no lastTransitionTime (the status writers add it).
import type { Condition } from '../api/common.js';

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

// Reconnect delays: the house backoff (platform/backoff.ts) from initialMs, capped at maxMs, jittered so a fleet
// does not reconnect in step.
import { backoffDelay, jittered } from '../platform/backoff.js';

export interface Backoff {
  initialMs: number;
  maxMs: number;
}

/** The delay before reconnect attempt `failures` (0 for the first retry): between half and all of the ceiling. */
export function reconnectDelayMs(
  failures: number,
  backoff: Backoff,
  random: () => number = Math.random,
): number {
  return jittered(backoffDelay(failures + 1, { firstMs: backoff.initialMs, maxMs: backoff.maxMs }), random);
}

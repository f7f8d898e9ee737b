// Per-object retry delays, pure: an object that failed waits before it is tried again (platform/backoff.ts), and
// a success or a change of what is wanted of the object starts it afresh.
import { type BackoffTimings, backoffDelay } from '../platform/backoff.js';

export type { BackoffTimings };

/** 2 s after a first failure, doubling to 5 min: a refused object costs the API server little while it stays refused. */
export const OBJECT_BACKOFF: BackoffTimings = { firstMs: 2_000, maxMs: 300_000 };

export interface Backoff {
  /** What was wanted of the object when it failed: another wish is tried at once. */
  fingerprint: string;
  /** Failures in a row for this fingerprint. */
  failures: number;
  /** Not tried again before this time (ms, on the caller's clock). */
  retryAt: number;
}

/** The state after another failure at `now`; a failure of another fingerprint counts as a first one. */
export function afterFailure(
  previous: Backoff | undefined,
  fingerprint: string,
  now: number,
  timings: BackoffTimings,
): Backoff {
  const failures = previous?.fingerprint === fingerprint ? previous.failures + 1 : 1;
  return { fingerprint, failures, retryAt: now + backoffDelay(failures, timings) };
}

/** Whether the object may be tried at `now`: never failed, wanted differently since, or its wait is over. */
export function mayTry(state: Backoff | undefined, fingerprint: string, now: number): boolean {
  return state === undefined || state.fingerprint !== fingerprint || now >= state.retryAt;
}

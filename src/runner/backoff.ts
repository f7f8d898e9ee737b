// Per-object retry delays, pure: an object that failed waits before it is tried again, twice as long after each
// failure in a row, up to a cap; a success or a change of what is wanted of the object starts it afresh.

export interface BackoffTimings {
  /** The wait after a first failure. */
  firstMs: number;
  /** The longest wait, however many failures in a row. */
  maxMs: number;
}

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

/** The wait after `failures` failures in a row (1 or more). */
export function backoffDelay(failures: number, timings: BackoffTimings): number {
  const doublings = Math.min(Math.max(failures - 1, 0), 52);
  return Math.min(timings.firstMs * 2 ** doublings, timings.maxMs);
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

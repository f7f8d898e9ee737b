// The one retry delay of the house: the first wait after one failure, doubling with each failure in a row, up to
// a cap; optionally jittered so that many clients do not retry in step.

export interface BackoffTimings {
  /** The wait after a first failure. */
  firstMs: number;
  /** The longest wait, however many failures in a row. */
  maxMs: number;
}

/** The wait after `failures` failures in a row (1 or more; 0 or less waits as after one). */
export function backoffDelay(failures: number, timings: BackoffTimings): number {
  const doublings = Math.min(Math.max(failures - 1, 0), 52);
  return Math.min(timings.firstMs * 2 ** doublings, timings.maxMs);
}

/** `delayMs` jittered: between half and all of it (`random` in [0, 1)). */
export function jittered(delayMs: number, random: () => number = Math.random): number {
  return delayMs / 2 + random() * (delayMs / 2);
}

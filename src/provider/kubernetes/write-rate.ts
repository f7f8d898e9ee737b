// The client side rate limit of status writes: `burst` requests at once, then `perSecond`, in the order asked
// for. Thousands of new routes then reach the API server as a steady stream a shared control plane can take,
// and how long writes waited for their turn is counted (an operator sees the limit biting).
import { createTokenBucket, type RateLimit } from '../../platform/token-bucket.js';

export interface WriteRate {
  readonly limit: RateLimit;
  /** Resolves when this request may go (after every request that asked before it). */
  take(): Promise<void>;
  /** Seconds requests spent waiting for their turn, in total. */
  waitedSeconds(): number;
  /** Requests waiting for their turn now. */
  waiting(): number;
}

export const DEFAULT_STATUS_WRITE_RATE: RateLimit = { perSecond: 150, burst: 300 };

export function createWriteRate(
  limit: RateLimit,
  clock: { now(): number; sleep(ms: number): Promise<void> } = {
    now: () => performance.now(),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  },
): WriteRate {
  const bucket = createTokenBucket(limit, clock.now);
  let line: Promise<void> = Promise.resolve();
  let waitedMs = 0;
  let queued = 0;
  return {
    limit,
    take() {
      queued++;
      const asked = clock.now();
      const turn = line.then(async () => {
        while (!bucket.take()) await clock.sleep(Math.max(1, bucket.waitMs()));
        waitedMs += clock.now() - asked;
        queued--;
      });
      line = turn;
      return turn;
    },
    waitedSeconds: () => waitedMs / 1000,
    waiting: () => queued,
  };
}

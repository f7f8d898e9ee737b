// When reconcile passes run: triggers while a pass runs lead to exactly one more pass, data plane news waits a
// moment to be gathered, and a failed pass is retried with a doubling delay until one succeeds.
import { backoffDelay } from '../platform/backoff.js';

export interface ScheduleTimings {
  /** How long data plane news (Acks, process changes) is gathered before it is translated. */
  settleMs: number;
  /** The delay before retrying a failed pass; it doubles with each failure in a row, up to `retryMaxMs`. */
  retryFirstMs: number;
  retryMaxMs: number;
}

export interface Schedule {
  /** A pass on the next turn of the event loop (many calls, one pass). */
  soon(): void;
  /** A pass after `settleMs`, unless one starts before (every pass reads the data plane afresh). */
  settle(): void;
  /** A pass now (or once more after the running one); resolves when it has run. */
  now(): Promise<void>;
  stop(): void;
}

/** `pass` answers whether it learnt something its own translation did not know (then it runs again at once). */
export function createSchedule(
  pass: () => Promise<boolean>,
  onError: (error: unknown, retryInMs: number) => void,
  timings: ScheduleTimings,
): Schedule {
  let running: Promise<void> | undefined;
  let again = false;
  let scheduled = false;
  let stopped = false;
  let settleTimer: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;

  async function runOnce(): Promise<void> {
    clearTimeout(settleTimer);
    settleTimer = undefined;
    try {
      if (await pass()) again = true;
      failures = 0;
    } catch (error) {
      failures++;
      const delay = backoffDelay(failures, { firstMs: timings.retryFirstMs, maxMs: timings.retryMaxMs });
      onError(error, delay);
      if (retryTimer === undefined && !stopped) {
        retryTimer = setTimeout(() => {
          retryTimer = undefined;
          void now();
        }, delay);
      }
    }
  }

  async function drive(): Promise<void> {
    do {
      again = false;
      await runOnce();
    } while (again && !stopped);
  }

  function now(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = drive().finally(() => {
      running = undefined;
    });
    return running;
  }

  return {
    soon() {
      if (scheduled || stopped) return;
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        void now();
      });
    },
    settle() {
      if (settleTimer !== undefined || stopped) return;
      settleTimer = setTimeout(() => {
        settleTimer = undefined;
        void now();
      }, timings.settleMs);
    },
    now,
    stop() {
      stopped = true;
      clearTimeout(settleTimer);
      clearTimeout(retryTimer);
    },
  };
}

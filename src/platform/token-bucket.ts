// A token bucket: `burst` events at once, then `perSecond` on average. The clock is injected so the
// arithmetic is testable; the default is the monotonic one.
import { performance } from 'node:perf_hooks';

export interface RateLimit {
  /** Events allowed at once, after a quiet period. */
  burst: number;
  /** Sustained events per second. */
  perSecond: number;
}

export interface TokenBucket {
  /** Takes one token; false when none is left. */
  take(): boolean;
  /** Milliseconds until the next token is there (0: one is there now). */
  waitMs(): number;
  /** Takes up to `n` whole tokens at once (a lease of them); returns how many it took. */
  takeUpTo(n: number): number;
  /** Whole tokens left now. */
  left(): number;
}

export function createTokenBucket(
  limit: RateLimit,
  now: () => number = () => performance.now(),
): TokenBucket {
  let tokens = limit.burst;
  let at = now();
  const refill = (): void => {
    const t = now();
    tokens = Math.min(limit.burst, tokens + ((t - at) / 1000) * limit.perSecond);
    at = t;
  };
  return {
    take() {
      refill();
      if (tokens < 1) return false;
      tokens -= 1;
      return true;
    },
    waitMs() {
      refill();
      return tokens >= 1 ? 0 : Math.ceil(((1 - tokens) / limit.perSecond) * 1000);
    },
    takeUpTo(n) {
      refill();
      const taken = Math.max(0, Math.min(n, Math.floor(tokens)));
      tokens -= taken;
      return taken;
    },
    left() {
      refill();
      return Math.floor(tokens);
    },
  };
}

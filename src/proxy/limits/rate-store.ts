// Where rate-limit tokens come from: a store hands out leases of tokens per (rule, key). The local store is a
// table of token buckets in one process (the proxy's only process, or the primary of its workers); the global
// store is Redis (redis-store.ts). A lease is never more than the store had: a limit is never exceeded by
// leasing, only (at worst) under-used while a lease sits unspent in another worker or replica.
import { createTokenBucket, type TokenBucket } from '../../platform/token-bucket.js';

/** What a store needs of a rule: its identity and its limit per period. */
export interface RateRuleShape {
  name: string;
  limit: number;
  periodSeconds: number;
}

export interface Grant {
  /** Tokens leased, 0 to the number asked for. */
  granted: number;
  /** Tokens the store still holds for this key after the lease. */
  remaining: number;
  /** When none was granted: milliseconds until one can be (retry-after); else until the lease lapses. */
  resetMs: number;
}

export interface RateStore {
  /** Leases up to `want` tokens of `key` under `rule`. A promise when the store is elsewhere (IPC, Redis). */
  take(rule: RateRuleShape, key: string, want: number): Grant | Promise<Grant>;
}

/** One counter's identity: the rule as it is now (a changed limit or period starts afresh) and the request's key. */
export function rateCounterId(rule: RateRuleShape, key: string): string {
  return `${rule.name}\u0000${rule.limit}\u0000${rule.periodSeconds}\u0000${key}`;
}

/** Keys a store or an allowance table holds at most: an attacker rotating keys evicts, it does not grow memory. */
export const MAX_RATE_KEYS = 100_000;

/**
 * Token buckets by (rule, limit, period, key), at most `maxKeys`: a new key past that evicts the oldest one
 * created (whose client then starts again from a full bucket). Rule changes start new buckets.
 */
export class BucketTable implements RateStore {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly now: () => number,
    private readonly maxKeys = MAX_RATE_KEYS,
  ) {}

  get size(): number {
    return this.buckets.size;
  }

  take(rule: RateRuleShape, key: string, want: number): Grant {
    const id = rateCounterId(rule, key);
    let bucket = this.buckets.get(id);
    if (bucket === undefined) {
      if (this.buckets.size >= this.maxKeys) {
        const oldest = this.buckets.keys().next().value;
        if (oldest !== undefined) this.buckets.delete(oldest);
      }
      bucket = createTokenBucket({ burst: rule.limit, perSecond: rule.limit / rule.periodSeconds }, this.now);
      this.buckets.set(id, bucket);
    }
    const granted = bucket.takeUpTo(want);
    return { granted, remaining: bucket.left(), resetMs: granted > 0 ? 0 : bucket.waitMs() };
  }
}

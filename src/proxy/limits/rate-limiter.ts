// A proxy process's rate-limit decisions: per (rule, key) an allowance of tokens leased from the rule's store, so
// that the common case is a decrement in this process with no lock, no message and no round trip. When the
// allowance is spent the request waits for one lease (requests of the same key share it); a refused key is
// refused here, without asking again, until the store said a token comes back.
import type { RateLimitRule } from '../../ir/fleet-config.js';
import { type Grant, MAX_RATE_KEYS, type RateStore, rateCounterId } from './rate-store.js';

/** How long leased tokens stay usable when the store gives no lifetime (a local bucket's): unspent ones lapse. */
export const LEASE_MS = 1_000;

/** Where a key stands under a rule after an allowed request, as the RateLimit field tells it. */
export interface RateStanding {
  rule: RateLimitRule;
  /** Tokens left: this process's allowance and what the store said it still held at the last lease. */
  remaining: number;
  /** Milliseconds until the quota is whole again (a window's end; a bucket refilled). */
  resetMs: number;
}

/** A rule that refused a request, and what the client is told (rate-limit-headers.ts). */
export interface RateRefusal {
  rule: RateLimitRule;
  /** Milliseconds until a token comes back. */
  retryAfterMs: number;
}

interface Allowance {
  tokens: number;
  /** Leased tokens lapse then; a refusal holds until then. */
  until: number;
  /** What the store still held for the key after the last lease. */
  storeRemaining: number;
  /** Set by a windowed store (Global): when its window ends. */
  windowEnd: number | undefined;
  /** A lease under way: the key's other requests wait for it instead of asking for their own. */
  pending: Promise<void> | undefined;
}

export interface RateLimiterOptions {
  /** The store of a rule's scope. */
  storeOf(rule: RateLimitRule): RateStore;
  /** Tokens leased at a time for a rule (1: every decision asks the store). */
  leaseSize(rule: RateLimitRule): number;
  now(): number;
  /** Told of every decision, for metrics. */
  decided(rule: RateLimitRule, allowed: boolean): void;
  maxKeys?: number;
}

export class RateLimiter {
  private readonly allowances = new Map<string, Allowance>();
  private readonly maxKeys: number;

  constructor(private readonly options: RateLimiterOptions) {
    this.maxKeys = options.maxKeys ?? MAX_RATE_KEYS;
  }

  /**
   * Takes one token of every rule, in order, for the keys `keyOf` gives; the first rule without one refuses (the
   * rules before it keep the token they gave). Synchronous while allowances last.
   */
  check(
    rules: readonly RateLimitRule[],
    keyOf: (rule: RateLimitRule) => string,
    from = 0,
  ): RateRefusal | undefined | Promise<RateRefusal | undefined> {
    for (let i = from; i < rules.length; i++) {
      const rule = rules[i]!;
      const outcome = this.takeOne(rule, keyOf(rule));
      if (outcome === true) continue;
      if (outcome instanceof Promise)
        return outcome.then((r) => (r === true ? this.check(rules, keyOf, i + 1) : r));
      return outcome;
    }
    return undefined;
  }

  /**
   * The rule of `rules` with the fewest tokens left for its key (the first of equals), after `check` allowed a
   * request: an estimate where leases sit in other workers or replicas, exact for one process alone.
   */
  standing(
    rules: readonly RateLimitRule[],
    keyOf: (rule: RateLimitRule) => string,
  ): RateStanding | undefined {
    const now = this.options.now();
    let best: RateStanding | undefined;
    for (const rule of rules) {
      const a = this.allowances.get(rateCounterId(rule, keyOf(rule)));
      const remaining = Math.min(rule.limit, Math.max(0, a?.tokens ?? 0) + (a?.storeRemaining ?? rule.limit));
      if (best !== undefined && best.remaining <= remaining) continue;
      const resetMs =
        a?.windowEnd !== undefined
          ? Math.max(0, a.windowEnd - now)
          : ((rule.limit - remaining) * rule.periodSeconds * 1000) / rule.limit;
      best = { rule, remaining, resetMs };
    }
    return best;
  }

  private takeOne(rule: RateLimitRule, key: string): true | RateRefusal | Promise<true | RateRefusal> {
    const id = rateCounterId(rule, key);
    const now = this.options.now();
    const allowance = this.allowances.get(id);
    if (allowance !== undefined && allowance.pending === undefined && now < allowance.until) {
      if (allowance.tokens > 0) {
        allowance.tokens--;
        this.options.decided(rule, true);
        return true;
      }
      if (allowance.tokens < 0) return this.refuse(rule, allowance.until - now);
    }
    if (allowance?.pending !== undefined) return allowance.pending.then(() => this.takeOne(rule, key));
    const grant = this.options.storeOf(rule).take(rule, key, this.options.leaseSize(rule));
    if (!(grant instanceof Promise)) return this.leased(rule, id, grant, now);
    const entry = this.entry(id);
    let settled: true | RateRefusal = true;
    entry.pending = grant.then((g) => {
      entry.pending = undefined;
      settled = this.leased(rule, id, g, this.options.now());
    });
    return entry.pending.then(() => settled);
  }

  /** Keeps what a lease gave beyond this request's token; none given: the key is refused until resetMs. */
  private leased(rule: RateLimitRule, id: string, grant: Grant, now: number): true | RateRefusal {
    const entry = this.entry(id);
    if (grant.granted > 0) {
      entry.tokens = grant.granted - 1;
      entry.until = now + (grant.resetMs > 0 ? grant.resetMs : LEASE_MS);
      entry.storeRemaining = grant.remaining;
      entry.windowEnd = grant.resetMs > 0 ? now + grant.resetMs : undefined;
      this.options.decided(rule, true);
      return true;
    }
    entry.tokens = -1;
    entry.until = now + Math.max(1, grant.resetMs);
    return this.refuse(rule, grant.resetMs);
  }

  private refuse(rule: RateLimitRule, retryAfterMs: number): RateRefusal {
    this.options.decided(rule, false);
    return { rule, retryAfterMs };
  }

  private entry(id: string): Allowance {
    let entry = this.allowances.get(id);
    if (entry === undefined) {
      if (this.allowances.size >= this.maxKeys) {
        const oldest = this.allowances.keys().next().value;
        if (oldest !== undefined) this.allowances.delete(oldest);
      }
      entry = { tokens: 0, until: 0, storeRemaining: 0, windowEnd: undefined, pending: undefined };
      this.allowances.set(id, entry);
    }
    return entry;
  }
}

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
  allowed: true;
  rule: RateLimitRule;
  /** Tokens left: this process's allowance and what the store said it still held at the last lease. */
  remaining: number;
  /** Milliseconds until the quota is whole again (a window's end; a bucket refilled). */
  resetMs: number;
}

/** A rule that refused a request, and what the client is told (rate-limit-headers.ts). */
export interface RateRefusal {
  allowed: false;
  rule: RateLimitRule;
  /** Milliseconds until a token comes back. */
  retryAfterMs: number;
}

/** What `check` decided: the rule that refused, or where the allowed request's tightest rule stands. */
export type RateDecision = RateRefusal | RateStanding;

/** The tightest rule so far of an allowed request and its allowance (carried across a lease waited for). */
interface Tightest {
  rule: RateLimitRule;
  remaining: number;
  allowance: Allowance;
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

export interface RateLimiterOptions<Subject> {
  /** The key of `subject` (a request) under `rule`: its bucket. */
  keyOf(rule: RateLimitRule, subject: Subject): string;
  /** The store of a rule's scope. */
  storeOf(rule: RateLimitRule): RateStore;
  /** Tokens leased at a time for a rule (1: every decision asks the store). */
  leaseSize(rule: RateLimitRule): number;
  now(): number;
  /** Told of every decision, for metrics. */
  decided(rule: RateLimitRule, allowed: boolean): void;
  maxKeys?: number;
}

export class RateLimiter<Subject> {
  private readonly allowances = new Map<string, Allowance>();
  private readonly maxKeys: number;

  constructor(private readonly options: RateLimiterOptions<Subject>) {
    this.maxKeys = options.maxKeys ?? MAX_RATE_KEYS;
  }

  /**
   * Takes one token of every rule, in order, for the keys of `subject`; the first rule without one refuses (the
   * rules before it keep the token they gave). Allowed: the tightest rule's standing, from the allowances just
   * spent (each key computed once). Synchronous while allowances last. `rules` holds one rule at least.
   */
  check(
    rules: readonly RateLimitRule[],
    subject: Subject,
    from = 0,
    carried?: Tightest,
  ): RateDecision | Promise<RateDecision> {
    // The tightest rule so far in three locals, not an object per rule: no allocation while allowances last.
    let bestRule = carried?.rule;
    let bestRemaining = carried?.remaining ?? Number.POSITIVE_INFINITY;
    let bestAllowance = carried?.allowance;
    for (let i = from; i < rules.length; i++) {
      const rule = rules[i]!;
      const outcome = this.takeOne(rule, this.options.keyOf(rule, subject));
      if (outcome instanceof Promise) {
        const sofar =
          bestRule === undefined
            ? undefined
            : { rule: bestRule, remaining: bestRemaining, allowance: bestAllowance! };
        return outcome.then((o) =>
          'retryAfterMs' in o ? o : this.check(rules, subject, i + 1, tighter(sofar, rule, o)),
        );
      }
      if ('retryAfterMs' in outcome) return outcome;
      const remaining = remainingOf(rule, outcome);
      if (remaining < bestRemaining) {
        bestRule = rule;
        bestRemaining = remaining;
        bestAllowance = outcome;
      }
    }
    return this.standingOf(bestRule!, bestRemaining, bestAllowance!);
  }

  /**
   * The standing of the rule with the fewest tokens left for its key (the first of equals): an estimate where
   * leases sit in other workers or replicas, exact for one process alone.
   */
  private standingOf(rule: RateLimitRule, remaining: number, allowance: Allowance): RateStanding {
    const resetMs =
      allowance.windowEnd !== undefined
        ? Math.max(0, allowance.windowEnd - this.options.now())
        : ((rule.limit - remaining) * rule.periodSeconds * 1000) / rule.limit;
    return { allowed: true, rule, remaining, resetMs };
  }

  /** One token of `key` under `rule`: the allowance it came from, or the refusal. */
  private takeOne(
    rule: RateLimitRule,
    key: string,
  ): Allowance | RateRefusal | Promise<Allowance | RateRefusal> {
    const id = rateCounterId(rule, key);
    const now = this.options.now();
    const allowance = this.allowances.get(id);
    if (allowance !== undefined && allowance.pending === undefined && now < allowance.until) {
      if (allowance.tokens > 0) {
        allowance.tokens--;
        this.options.decided(rule, true);
        return allowance;
      }
      if (allowance.tokens < 0) return this.refuse(rule, allowance.until - now);
    }
    if (allowance?.pending !== undefined) return allowance.pending.then(() => this.takeOne(rule, key));
    const grant = this.options.storeOf(rule).take(rule, key, this.options.leaseSize(rule));
    if (!(grant instanceof Promise)) return this.leased(rule, id, grant, now);
    const entry = this.entry(id);
    let settled: Allowance | RateRefusal = entry;
    entry.pending = grant.then((g) => {
      entry.pending = undefined;
      settled = this.leased(rule, id, g, this.options.now());
    });
    return entry.pending.then(() => settled);
  }

  /** Keeps what a lease gave beyond this request's token; none given: the key is refused until resetMs. */
  private leased(rule: RateLimitRule, id: string, grant: Grant, now: number): Allowance | RateRefusal {
    const entry = this.entry(id);
    if (grant.granted > 0) {
      entry.tokens = grant.granted - 1;
      entry.until = now + (grant.resetMs > 0 ? grant.resetMs : LEASE_MS);
      entry.storeRemaining = grant.remaining;
      entry.windowEnd = grant.resetMs > 0 ? now + grant.resetMs : undefined;
      this.options.decided(rule, true);
      return entry;
    }
    entry.tokens = -1;
    entry.until = now + Math.max(1, grant.resetMs);
    return this.refuse(rule, grant.resetMs);
  }

  private refuse(rule: RateLimitRule, retryAfterMs: number): RateRefusal {
    this.options.decided(rule, false);
    return { allowed: false, rule, retryAfterMs };
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

/** Tokens left of a key under `rule` after a take: its allowance here and what the store still held. */
function remainingOf(rule: RateLimitRule, allowance: Allowance): number {
  return Math.min(rule.limit, Math.max(0, allowance.tokens) + allowance.storeRemaining);
}

/** `best`, or `rule` when its key has fewer tokens left (the first of equals stays). */
function tighter(best: Tightest | undefined, rule: RateLimitRule, allowance: Allowance): Tightest {
  const remaining = remainingOf(rule, allowance);
  if (best !== undefined && best.remaining <= remaining) return best;
  return { rule, remaining, allowance };
}

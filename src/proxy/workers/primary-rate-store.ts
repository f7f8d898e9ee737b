// Local rate limits across a proxy's workers: the primary holds the token buckets (one BucketTable for the whole
// proxy) and its workers lease tokens from it over IPC, a batch at a time (rate-limits.ts leaseSize), spending them
// with no message per request. A worker process has no memory it can share with its siblings (node:cluster forks
// processes; SharedArrayBuffer crosses threads only), so the primary is where one count can live.
import type { Grant, RateRuleShape, RateStore } from '../limits/rate-store.js';
import type { FromWorker, ToWorker } from './protocol.js';

/** A worker's store: each lease is a message to the primary and its answer. */
export class PrimaryRateStore implements RateStore {
  private next = 0;
  private readonly pending = new Map<number, (grant: Grant) => void>();

  take(rule: RateRuleShape, key: string, want: number): Promise<Grant> {
    return new Promise((resolve) => {
      const lease = ++this.next;
      this.pending.set(lease, resolve);
      const message: FromWorker = {
        type: 'lease',
        lease,
        rule: { name: rule.name, limit: rule.limit, periodSeconds: rule.periodSeconds },
        key,
        want,
      };
      process.send?.(message, undefined, undefined, (error: Error | null) => {
        // The primary is gone and this worker drains: its last requests are not held up by a limit.
        if (error !== null)
          this.settle({ type: 'leased', lease, grant: { granted: want, remaining: 0, resetMs: 0 } });
      });
    });
  }

  /** The primary's answer to a lease. */
  settle(message: Extract<ToWorker, { type: 'leased' }>): void {
    const resolve = this.pending.get(message.lease);
    this.pending.delete(message.lease);
    resolve?.(message.grant);
  }
}

// Token reviews remembered by the token's SHA-256 (the token itself is never kept): a proxy that opens stream
// after stream with one token costs one review until it expires or the TTL passes, and reviews of one token
// in flight at once are shared. Failures are not remembered, so a transient one is not repeated.
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Identity } from './server-types.js';

export interface TokenCacheOptions {
  /** The real review. */
  authenticate(token: string): Promise<Identity>;
  /** How long a review stands (less when the token expires sooner). */
  ttlMs: number;
  /** Reviews kept at most; the oldest go first. */
  maxEntries: number;
  /** Milliseconds since the epoch (token expiries are in that clock). */
  now?: () => number;
}

export interface TokenCache {
  /** True when `token` would be answered without a review. */
  has(token: string): boolean;
  authenticate(token: string): Promise<Identity>;
}

interface Entry {
  review: Promise<Identity>;
  /** Until when the review stands; Infinity while it is in flight. */
  until: number;
}

export function createTokenCache(options: TokenCacheOptions): TokenCache {
  const now = options.now ?? (() => performance.timeOrigin + performance.now());
  const entries = new Map<string, Entry>();
  const digest = (token: string): string => createHash('sha256').update(token).digest('hex');

  function live(key: string): Entry | undefined {
    const entry = entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.until > now()) return entry;
    entries.delete(key);
    return undefined;
  }

  return {
    has: (token) => live(digest(token)) !== undefined,
    authenticate(token) {
      const key = digest(token);
      const cached = live(key);
      if (cached !== undefined) return cached.review;
      const entry: Entry = { review: options.authenticate(token), until: Number.POSITIVE_INFINITY };
      entries.set(key, entry);
      while (entries.size > options.maxEntries) entries.delete(entries.keys().next().value as string);
      entry.review.then(
        (identity) => {
          entry.until = Math.min(identity.expiresAt ?? Number.POSITIVE_INFINITY, now() + options.ttlMs);
        },
        () => {
          if (entries.get(key) === entry) entries.delete(key);
        },
      );
      return entry.review;
    },
  };
}

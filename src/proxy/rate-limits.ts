// A proxy process's rate limits: the limiter (limits/rate-limiter.ts), the store of each scope, and the key of a
// request under a rule. Local rules lease from this process's token buckets, or from the primary's when the proxy
// has workers (so a Local limit holds for the whole proxy); Global rules from the Redis the rule names, one client
// per Redis, made on first use.
import type { RateLimitKey, RateLimitRule, RedisConnection } from '../ir/fleet-config.js';
import { type ClientRequest, clientIpOf } from './exchange.js';
import { type RateDecision, RateLimiter } from './limits/rate-limiter.js';
import { BucketTable, type RateStore } from './limits/rate-store.js';
import { RedisRateStore } from './limits/redis-store.js';
import type { ProxyOptions } from './options.js';
import type { ProxyMetrics } from './telemetry/metrics.js';

export interface RateLimits {
  /**
   * One token of every rule (one at least) for `request`: the rule that refused, or the tightest rule's standing
   * (the RateLimit field of the response). A promise while a lease is asked for.
   */
  check(rules: readonly RateLimitRule[], request: ClientRequest): RateDecision | Promise<RateDecision>;
  close(): Promise<void>;
}

/** Tokens leased at a time from a store across processes: a twentieth of the limit, 1 to 100. */
export function leaseSize(limit: number): number {
  return Math.max(1, Math.min(100, Math.floor(limit / 20)));
}

/** The first value of header `lower` among header lines (name, value, ...); '' when absent. */
function firstHeader(raw: readonly string[], lower: string): string {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === lower.length && name.toLowerCase() === lower) return raw[i + 1]!;
  }
  return '';
}

/** The request target's path (the query cut off): a rate limit keyed by path counts by it. */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

function keyPart(part: RateLimitKey, request: ClientRequest): string {
  switch (part.type) {
    case 'ClientIp':
      return clientIpOf(request);
    case 'Header':
      return firstHeader(request.rawHeaders, part.name);
    case 'Path':
      return pathOf(request.url);
    case 'Claim': {
      // The authentication policy's verified claims, once it set them; none: an empty part.
      const claim = request.claims?.[part.name];
      return claim === undefined ? '' : typeof claim === 'string' ? claim : JSON.stringify(claim);
    }
  }
}

/** The bucket of `request` under `rule`: its key parts joined (NUL cannot occur in any of them). */
export function rateLimitKey(rule: RateLimitRule, request: ClientRequest): string {
  const keys = rule.keys;
  if (keys.length === 1) return keyPart(keys[0]!, request);
  let out = '';
  for (const part of keys) out += `${keyPart(part, request)}\u0000`;
  return out;
}

export function createRateLimits(options: ProxyOptions, metrics: ProxyMetrics): RateLimits {
  const now = (): number => performance.now();
  const local: RateStore = options.localRateStore ?? new BucketTable(now);
  const localLease = options.localRateStore === undefined ? () => 1 : leaseSize;
  const redis = new Map<string, RedisRateStore>();
  const redisOf = (connection: RedisConnection): RateStore => {
    const { failureMode, timeoutMs, ...server } = connection;
    const id = JSON.stringify(server);
    let client = redis.get(id);
    if (client === undefined) {
      client = new RedisRateStore({ ...server, timeoutMs }, options.log, {
        event: (name) => metrics.rateLimitStore('Global', name),
      });
      redis.set(id, client);
    }
    return client.storeFor({ failureMode, timeoutMs });
  };
  const limiter = new RateLimiter<ClientRequest>({
    keyOf: rateLimitKey,
    storeOf: (rule) => (rule.scope === 'Global' && rule.redis !== undefined ? redisOf(rule.redis) : local),
    leaseSize: (rule) => (rule.scope === 'Global' ? leaseSize(rule.limit) : localLease(rule.limit)),
    now,
    decided: (rule, allowed) => metrics.rateLimit(rule.name, allowed),
  });
  return {
    check: (rules, request) => limiter.check(rules, request),
    async close() {
      await Promise.all([...redis.values()].map((store) => store.close()));
      redis.clear();
    },
  };
}

// Global rate limits: one counter per (rule, key, window) in a Redis shared by every proxy of a fleet. A lease
// adds the tokens it asks for to the window's counter in one atomic script and gets what was still under the
// limit, so the replicas together never pass `limit` in a window while Redis answers; unspent leases are only
// lost (the window's tokens given out early). Windows are fixed, `periodSeconds` long, aligned on the epoch by
// each proxy's clock. Redis slow or down: the rule's failureMode lets requests through (Open) or refuses them
// (Closed), counted, and logged once per change of state.
import { createHash } from 'node:crypto';
import { createClient } from 'redis';
import type { RedisConnection } from '../../ir/fleet-config.js';
import { type BackoffTimings, backoffDelay } from '../../platform/backoff.js';
import type { Logger } from '../../platform/log-line.js';
import { type Grant, type RateRuleShape, type RateStore, rateCounterId } from './rate-store.js';

/** Adds ARGV[1] to the window's counter (expiring with the window) and returns the new count. */
const LEASE_SCRIPT = `local used = redis.call('INCRBY', KEYS[1], ARGV[1])
if used == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return used`;

/** A failed-open lease lasts this long before Redis is asked again. */
const FAILED_LEASE_MS = 1_000;
/** Reconnecting forever, from 50 ms apart to a second: a Redis that comes back is used again soon. */
const REDIS_RECONNECT: BackoffTimings = { firstMs: 50, maxMs: 1_000 };

export interface RedisStoreEvents {
  /** `round_trip`, `failure`, `failed_open`, `failed_closed`. */
  event(name: string): void;
}

/** The window's counter key: the rule and key hashed (a client's header value never becomes a Redis key as is). */
export function windowKey(rule: RateRuleShape, key: string, window: number): string {
  const id = createHash('sha256').update(rateCounterId(rule, key)).digest('base64url').slice(0, 22);
  return `portico:rl:${id}:${window}`;
}

/** What a lease got, from the window's count after adding `want` to it. */
export function windowGrant(limit: number, want: number, used: number, resetMs: number): Grant {
  const before = used - want;
  const granted = Math.max(0, Math.min(want, limit - before));
  return { granted, remaining: Math.max(0, limit - used), resetMs };
}

/** How a rule rides out a failing Redis: its own failure mode and timeout (rules may share one Redis). */
export type FailurePolicy = Pick<RedisConnection, 'failureMode' | 'timeoutMs'>;

/** One client per Redis server (address, password, TLS); each rule brings its failure policy. */
export class RedisRateStore {
  private readonly client: ReturnType<typeof createClient>;
  private healthy = true;
  private closed = false;

  constructor(
    private readonly connection: Omit<RedisConnection, 'failureMode'>,
    private readonly log: Logger,
    private readonly events: RedisStoreEvents,
    private readonly now: () => number = Date.now,
  ) {
    const [host, port] = splitHostPort(connection.address);
    const tls = connection.tls;
    this.client = createClient({
      socket: {
        host,
        port,
        connectTimeout: Math.max(1_000, connection.timeoutMs),
        reconnectStrategy: (retries: number) => backoffDelay(retries + 1, REDIS_RECONNECT),
        ...(tls === undefined
          ? {}
          : { tls: true as const, ca: tls.caPem, servername: tls.serverName ?? host }),
      },
      ...(connection.password === undefined ? {} : { password: connection.password }),
      // A command while disconnected fails at once instead of waiting in a queue: the failure mode decides.
      disableOfflineQueue: true,
    });
    this.client.on('error', (error: Error) => this.failed(error));
    this.firstReady = new Promise<void>((resolve) => this.client.once('ready', () => resolve()));
    this.client.connect().catch((error: Error) => this.failed(error));
  }

  /** Resolves once the client first connected: a lease asked before then waits for it (within its timeout). */
  private readonly firstReady: Promise<void>;

  /** This Redis as a rule's store, with the rule's failure policy. */
  storeFor(policy: FailurePolicy): RateStore {
    return { take: (rule, key, want) => this.take(rule, key, want, policy) };
  }

  async take(rule: RateRuleShape, key: string, want: number, policy: FailurePolicy): Promise<Grant> {
    const periodMs = rule.periodSeconds * 1000;
    const now = this.now();
    const window = Math.floor(now / periodMs);
    const resetMs = (window + 1) * periodMs - now;
    try {
      this.events.event('round_trip');
      const used = await this.leaseWithin(windowKey(rule, key, window), want, resetMs, policy.timeoutMs);
      this.recovered();
      return windowGrant(rule.limit, want, used, resetMs);
    } catch (error) {
      this.failed(error as Error);
      const open = policy.failureMode === 'Open';
      this.events.event(open ? 'failed_open' : 'failed_closed');
      return { granted: open ? want : 0, remaining: 0, resetMs: FAILED_LEASE_MS };
    }
  }

  private leaseWithin(redisKey: string, want: number, ttlMs: number, timeoutMs: number): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    // A proxy's first requests must not count as a Redis failure only because its connection is being made.
    const lease = this.firstReady.then(() =>
      this.client.eval(LEASE_SCRIPT, { keys: [redisKey], arguments: [String(want), String(ttlMs + 1_000)] }),
    );
    return Promise.race([lease, timeout])
      .then((used) => Number(used))
      .finally(() => clearTimeout(timer));
  }

  private failed(error: Error): void {
    if (this.closed) return;
    this.events.event('failure');
    if (!this.healthy) return;
    this.healthy = false;
    this.log.warn(
      `global rate limits: redis ${this.connection.address} failed (${error.message}); rules fail open or closed as they say`,
    );
  }

  private recovered(): void {
    if (this.healthy) return;
    this.healthy = true;
    this.log.info(`global rate limits: redis ${this.connection.address} answers again`);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.client.close().catch(() => undefined);
  }
}

function splitHostPort(address: string): [string, number] {
  const cut = address.lastIndexOf(':');
  const host = address.slice(0, cut).replace(/^\[|\]$/g, '');
  return [host, Number(address.slice(cut + 1))];
}

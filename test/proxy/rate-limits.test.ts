// Local rate limits: the limiter's leases and refusals on an injected clock, the 429 fields, and a real proxy
// refusing the request over a rule's limit with retry-after and the IETF RateLimit fields, per key.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RateLimitRule } from '../../src/ir/fleet-config.js';
import { validateFleetConfig } from '../../src/ir/validate.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import {
  rateLimitedLines,
  rateStandingLines,
  structuredString,
} from '../../src/proxy/limits/rate-limit-headers.js';
import { RateLimiter } from '../../src/proxy/limits/rate-limiter.js';
import { BucketTable, type Grant, type RateStore } from '../../src/proxy/limits/rate-store.js';
import { windowGrant } from '../../src/proxy/limits/redis-store.js';
import { leaseSize } from '../../src/proxy/rate-limits.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { closeServer, httpRequest, startEcho } from '../support/http.js';

const RULE: RateLimitRule = {
  name: 'ns/policy/rule',
  keys: [{ type: 'ClientIp' }],
  limit: 3,
  periodSeconds: 60,
  scope: 'Local',
};

function limiterOn(store: RateStore, clock: { t: number }, lease = 1) {
  const decisions: boolean[] = [];
  const keys = { computed: 0 };
  const limiter = new RateLimiter<string>({
    keyOf: (_rule, key) => {
      keys.computed++;
      return key;
    },
    storeOf: () => store,
    leaseSize: () => lease,
    now: () => clock.t,
    decided: (_rule, allowed) => decisions.push(allowed),
  });
  return { limiter, decisions, keys };
}

describe('the limiter and its local store', () => {
  it('allows the limit, refuses the next with the wait until a token returns, and refills', () => {
    const clock = { t: 0 };
    const { limiter, decisions } = limiterOn(new BucketTable(() => clock.t), clock);
    const allowed = (key: string) => {
      const decision = limiter.check([RULE], key);
      assert.ok(!(decision instanceof Promise));
      return decision.allowed;
    };
    for (let i = 0; i < 3; i++) assert.equal(allowed('a'), true);
    const refusal = limiter.check([RULE], 'a');
    assert.ok(!(refusal instanceof Promise) && !refusal.allowed);
    assert.equal(refusal.retryAfterMs, 20_000); // 3 per 60 s: a token every 20 s
    assert.equal(allowed('b'), true, 'another key has its own bucket');
    clock.t = 20_000;
    assert.equal(allowed('a'), true);
    assert.deepEqual(decisions, [true, true, true, false, true, true]);
  });

  it("tells an allowed request's standing: the tightest rule, its tokens left and the time to refill", () => {
    const clock = { t: 0 };
    const { limiter, keys } = limiterOn(new BucketTable(() => clock.t), clock);
    const wide: RateLimitRule = { ...RULE, name: 'ns/policy/wide', limit: 100 };
    assert.deepEqual(limiter.check([wide, RULE], 'a'), {
      allowed: true,
      rule: RULE,
      remaining: 2,
      resetMs: 20_000,
    });
    const standing = limiter.check([wide, RULE], 'a');
    assert.ok(!(standing instanceof Promise) && standing.allowed);
    assert.equal(keys.computed, 4, 'each key computed once per request, the standing from the same take');
    assert.deepEqual(rateStandingLines(standing), [
      'ratelimit-policy',
      '"ns/policy/rule";q=3;w=60',
      'ratelimit',
      '"ns/policy/rule";r=1;t=40',
    ]);
  });

  it('spends a lease locally and never grants past the store', async () => {
    let asked = 0;
    const clock = { t: 0 };
    const table = new BucketTable(() => clock.t);
    const counting: RateStore = {
      take: (rule, key, want): Promise<Grant> => {
        asked++;
        return Promise.resolve(table.take(rule, key, want));
      },
    };
    const rule = { ...RULE, limit: 10 };
    const { limiter } = limiterOn(counting, clock, 4);
    // After a lease waited for, the standing comes from it: 3 tokens here and 6 the store still holds.
    assert.deepEqual(await limiter.check([rule], 'k'), { allowed: true, rule, remaining: 9, resetMs: 6_000 });
    let allowed = 1;
    for (let i = 1; i < 15; i++) if ((await limiter.check([rule], 'k')).allowed) allowed++;
    assert.equal(allowed, 10);
    // 4 + 4 + 2 tokens in three leases, then one refusal remembered until a token returns.
    assert.equal(asked, 4);
  });

  it('bounds its key table: the oldest bucket goes first', () => {
    const table = new BucketTable(() => 0, 2);
    table.take(RULE, 'a', 3);
    table.take(RULE, 'b', 1);
    table.take(RULE, 'c', 1);
    assert.equal(table.size, 2);
    assert.equal(table.take(RULE, 'a', 3).granted, 3, "a's bucket was evicted: it starts full");
  });

  it('leases a twentieth of the limit, 1 to 100', () => {
    assert.deepEqual([leaseSize(5), leaseSize(100), leaseSize(10_000)], [1, 5, 100]);
  });

  it('grants within a window what is left under the limit', () => {
    assert.deepEqual(windowGrant(10, 4, 4, 500), { granted: 4, remaining: 6, resetMs: 500 });
    assert.deepEqual(windowGrant(10, 4, 12, 500), { granted: 2, remaining: 0, resetMs: 500 });
    assert.deepEqual(windowGrant(10, 4, 20, 500), { granted: 0, remaining: 0, resetMs: 500 });
  });
});

describe('429 fields', () => {
  it('are retry-after and the structured RateLimit-Policy and RateLimit fields', () => {
    assert.deepEqual(rateLimitedLines({ allowed: false, rule: RULE, retryAfterMs: 1500 }), [
      'retry-after',
      '2',
      'ratelimit-policy',
      '"ns/policy/rule";q=3;w=60',
      'ratelimit',
      '"ns/policy/rule";r=0;t=2',
    ]);
    assert.equal(structuredString('a"b\\c\u00e9'), '"a\\"b\\\\c?"');
  });
});

describe('rate limit validation', () => {
  it('requires redis for a Global rule and names the field', () => {
    const config = fleet([
      {
        listener: listener(80),
        vhosts: [vhost(80, '*', [{ ...route(forward([])), rateLimits: [{ ...RULE, scope: 'Global' }] }])],
      },
    ]);
    assert.throws(
      () => validateFleetConfig(JSON.parse(JSON.stringify(config))),
      /virtualHosts\[0\]\.routes\[0\]\.rateLimits\[0\]\.redis: required when scope is Global/,
    );
  });
});

describe('a proxy with a local rate limit', () => {
  let proxy: PorticoProxy;
  let port: number;
  let closeEcho: () => Promise<void>;

  before(async () => {
    const echo = await startEcho('a');
    closeEcho = () => closeServer(echo.server);
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    const rule: RateLimitRule = {
      name: 'default/per-user/by-ip-and-user',
      keys: [{ type: 'ClientIp' }, { type: 'Header', name: 'x-user' }],
      limit: 3,
      periodSeconds: 3600,
      scope: 'Local',
    };
    const limited = { ...route(forward(['default/a:80'])), rateLimits: [rule] };
    const config = fleet(
      [{ listener: listener(80), vhosts: [vhost(80, '*', [limited])] }],
      [upstream('default/a:80', [echo.port])],
    );
    assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
    port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
  });

  after(async () => {
    await proxy.close();
    await closeEcho();
  });

  it('answers 429 with retry-after and RateLimit fields past the limit, per key', async () => {
    const as = (user: string) => httpRequest(port, '/', { headers: { 'x-user': user } });
    for (let i = 0; i < 3; i++) assert.equal((await as('alice')).status, 200);
    const refused = await as('alice');
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['retry-after'], '1200');
    assert.equal(refused.headers['ratelimit-policy'], '"default/per-user/by-ip-and-user";q=3;w=3600');
    assert.equal(refused.headers.ratelimit, '"default/per-user/by-ip-and-user";r=0;t=1200');
    assert.equal((await as('bob')).status, 200);
  });
});

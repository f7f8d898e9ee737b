import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Identity } from '../../src/discovery/server.js';
import { createTokenCache } from '../../src/discovery/token-cache.js';

function counting(expiresAt?: number) {
  const calls: string[] = [];
  const authenticate = async (token: string): Promise<Identity> => {
    calls.push(token);
    if (token.startsWith('bad')) throw new Error('rejected');
    return { username: 'u', groups: [], extra: {}, ...(expiresAt === undefined ? {} : { expiresAt }) };
  };
  return { calls, authenticate };
}

test('a review stands until the TTL passes, and reviews in flight are shared', async () => {
  let now = 1_000;
  const { calls, authenticate } = counting();
  const cache = createTokenCache({ authenticate, ttlMs: 100, maxEntries: 10, now: () => now });
  await Promise.all([cache.authenticate('t'), cache.authenticate('t')]);
  await cache.authenticate('t');
  assert.equal(calls.length, 1);
  now += 101;
  assert.equal(cache.has('t'), false);
  await cache.authenticate('t');
  assert.equal(calls.length, 2);
});

test('a review stands no longer than its token', async () => {
  let now = 1_000;
  const { calls, authenticate } = counting(1_050);
  const cache = createTokenCache({ authenticate, ttlMs: 10_000, maxEntries: 10, now: () => now });
  await cache.authenticate('t');
  now = 1_051;
  await cache.authenticate('t');
  assert.equal(calls.length, 2);
});

test('a failed review is not remembered, and the oldest entries go beyond the bound', async () => {
  const { calls, authenticate } = counting();
  const cache = createTokenCache({ authenticate, ttlMs: 10_000, maxEntries: 2 });
  await assert.rejects(cache.authenticate('bad'));
  await assert.rejects(cache.authenticate('bad'));
  assert.equal(calls.length, 2);
  for (const t of ['a', 'b', 'c']) await cache.authenticate(t);
  assert.equal(cache.has('a'), false);
  assert.equal(cache.has('c'), true);
});

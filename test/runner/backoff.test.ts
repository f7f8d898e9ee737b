import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backoffDelay } from '../../src/platform/backoff.js';
import { afterFailure, mayTry, OBJECT_BACKOFF } from '../../src/runner/backoff.js';

test('the wait doubles from 2 s with each failure in a row and stops at 5 min', () => {
  const waits = [1, 2, 3, 4, 8, 9, 10, 100, 10_000].map((n) => backoffDelay(n, OBJECT_BACKOFF));
  assert.deepEqual(waits, [2000, 4000, 8000, 16_000, 256_000, 300_000, 300_000, 300_000, 300_000]);
});

test('failures of the same wish count up; another wish starts again from the first wait', () => {
  let state = afterFailure(undefined, 'v1', 0, OBJECT_BACKOFF);
  assert.deepEqual(state, { fingerprint: 'v1', failures: 1, retryAt: 2000 });
  state = afterFailure(state, 'v1', 2000, OBJECT_BACKOFF);
  assert.deepEqual(state, { fingerprint: 'v1', failures: 2, retryAt: 6000 });
  state = afterFailure(state, 'v2', 6000, OBJECT_BACKOFF);
  assert.deepEqual(state, { fingerprint: 'v2', failures: 1, retryAt: 8000 });
});

test('an object may be tried when it never failed, when its wish changed, or once its wait is over', () => {
  const state = afterFailure(undefined, 'v1', 1000, OBJECT_BACKOFF);
  assert.equal(mayTry(undefined, 'v1', 0), true);
  assert.equal(mayTry(state, 'v1', 2999), false);
  assert.equal(mayTry(state, 'v1', 3000), true);
  assert.equal(mayTry(state, 'v2', 1001), true);
});

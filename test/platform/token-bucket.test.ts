// The token bucket's arithmetic on an injected clock.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTokenBucket } from '../../src/platform/token-bucket.js';

test('a token bucket gives its burst at once, then tokens at its rate, and says how long the next one is', () => {
  let now = 0;
  const bucket = createTokenBucket({ burst: 3, perSecond: 2 }, () => now);
  assert.deepEqual([bucket.take(), bucket.take(), bucket.take(), bucket.take()], [true, true, true, false]);
  assert.equal(bucket.waitMs(), 500);
  now = 499;
  assert.equal(bucket.take(), false);
  now = 500;
  assert.equal(bucket.take(), true);
  // A long quiet while refills to the burst, no more.
  now = 100_000;
  assert.deepEqual([bucket.take(), bucket.take(), bucket.take(), bucket.take()], [true, true, true, false]);
});

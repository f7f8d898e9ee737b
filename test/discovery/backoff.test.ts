import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reconnectDelayMs } from '../../src/discovery/backoff.js';

test('reconnect delays double from the initial delay up to the cap, jittered within the upper half', () => {
  const backoff = { initialMs: 100, maxMs: 1000 };
  const low = () => 0;
  const high = () => 1;
  assert.deepEqual(
    [0, 1, 2, 3, 4, 10, 1000].map((n) => reconnectDelayMs(n, backoff, high)),
    [100, 200, 400, 800, 1000, 1000, 1000],
  );
  assert.deepEqual(
    [0, 1, 4].map((n) => reconnectDelayMs(n, backoff, low)),
    [50, 100, 500],
  );
  assert.equal(
    reconnectDelayMs(2, backoff, () => 0.5),
    300,
  );
});

// The status write rate: a burst at once, then the rate, in the order asked, with the waiting counted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createWriteRate } from '../../../src/provider/kubernetes/write-rate.js';

test('burst requests go at once, the rest one per 1/rate seconds, in order, and their waiting is counted', async () => {
  let now = 0;
  const slept: number[] = [];
  const clock = {
    now: () => now,
    sleep: async (ms: number) => {
      slept.push(ms);
      now += ms;
    },
  };
  const rate = createWriteRate({ perSecond: 10, burst: 3 }, clock);
  const order: number[] = [];
  const times: number[] = [];
  await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      rate.take().then(() => {
        order.push(i);
        times.push(now);
      }),
    ),
  );
  assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(times, [0, 0, 0, 100, 200, 300]);
  assert.equal(rate.waiting(), 0);
  // Waited: 0 + 0 + 0 + 100 + 200 + 300 ms.
  assert.equal(rate.waitedSeconds(), 0.6);
  assert.ok(slept.every((ms) => ms >= 1));
});

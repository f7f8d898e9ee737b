import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSchedule } from '../../src/runner/schedule.js';

async function until(done: () => boolean): Promise<void> {
  for (let waited = 0; !done(); waited += 5) {
    if (waited > 3000) assert.fail('timed out');
    await sleep(5);
  }
}

const timings = { settleMs: 30, retryFirstMs: 10, retryMaxMs: 40 };

/** A pass that records when it ran and can be made to wait, fail, or ask for another pass. */
function recorder() {
  const runs: number[] = [];
  let release: (() => void) | undefined;
  let blocked = false;
  let failures = 0;
  let learnt = 0;
  const started = Date.now();
  return {
    runs,
    block: () => {
      blocked = true;
    },
    release: () => {
      blocked = false;
      release?.();
    },
    failNext: (n: number) => {
      failures = n;
    },
    learnNext: (n: number) => {
      learnt = n;
    },
    async pass(): Promise<boolean> {
      runs.push(Date.now() - started);
      if (blocked) await new Promise<void>((resolve) => (release = resolve));
      if (failures > 0) {
        failures--;
        throw new Error('sink failed');
      }
      if (learnt > 0) {
        learnt--;
        return true;
      }
      return false;
    },
  };
}

test('many triggers on one turn make one pass; triggers during a pass make exactly one more', async () => {
  const r = recorder();
  const schedule = createSchedule(r.pass, assert.fail, timings);
  for (let i = 0; i < 10; i++) schedule.soon();
  await sleep(5);
  assert.equal(r.runs.length, 1);
  r.block();
  const running = schedule.now();
  for (let i = 0; i < 10; i++) void schedule.now();
  schedule.soon();
  r.release();
  await running;
  assert.equal(r.runs.length, 3);
  schedule.stop();
});

test('settled news waits, and a pass that starts meanwhile makes it unnecessary', async () => {
  const r = recorder();
  const schedule = createSchedule(r.pass, assert.fail, timings);
  schedule.settle();
  schedule.settle();
  await sleep(5);
  assert.equal(r.runs.length, 0);
  await sleep(50);
  assert.equal(r.runs.length, 1);
  schedule.settle();
  await schedule.now();
  await sleep(50);
  assert.equal(r.runs.length, 2);
  schedule.stop();
});

test('a pass that learnt something runs again at once', async () => {
  const r = recorder();
  const schedule = createSchedule(r.pass, assert.fail, timings);
  r.learnNext(2);
  await schedule.now();
  assert.equal(r.runs.length, 3);
  schedule.stop();
});

test('a failed pass is retried with a doubling delay, up to the cap, until one succeeds', async () => {
  const r = recorder();
  const delays: number[] = [];
  const schedule = createSchedule(
    r.pass,
    (error, retryInMs) => {
      assert.equal((error as Error).message, 'sink failed');
      delays.push(retryInMs);
    },
    timings,
  );
  r.failNext(4);
  await schedule.now();
  await until(() => r.runs.length === 5);
  assert.deepEqual(delays, [10, 20, 40, 40]);
  assert.equal(r.runs.length, 5);
  // After a success the delay starts over.
  r.failNext(1);
  await schedule.now();
  assert.deepEqual(delays, [10, 20, 40, 40, 10]);
  schedule.stop();
});

test('after stop nothing runs: no pass, no retry, no settled pass', async () => {
  const r = recorder();
  const schedule = createSchedule(r.pass, () => {}, timings);
  r.failNext(1);
  await schedule.now();
  schedule.settle();
  schedule.stop();
  schedule.soon();
  await schedule.now();
  await sleep(60);
  assert.equal(r.runs.length, 1);
});

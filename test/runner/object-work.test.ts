// The per-object work queue: at most `concurrency` objects at once, one object's failure waits its own backoff
// while the others go on, the latest wish wins, and work is dropped (not failed) while it is not allowed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createObjectWork } from '../../src/runner/object-work.js';
import { manualTimers } from '../support/manual-timers.js';

function gate() {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open: () => open() };
}

const work = (
  timers: ReturnType<typeof manualTimers>,
  options: { concurrency?: number; allowed?: () => boolean } = {},
) => {
  const errors: string[] = [];
  const queue = createObjectWork({
    concurrency: options.concurrency ?? 2,
    backoff: { firstMs: 100, maxMs: 1000 },
    allowed: options.allowed,
    now: timers.now,
    setTimer: timers.setTimer,
    onError: (key, _error, retryInMs) => errors.push(`${key} ${retryInMs}`),
  });
  return { queue, errors };
};

test('no more than `concurrency` objects run at once; the rest start as they finish', async () => {
  const timers = manualTimers();
  const { queue } = work(timers, { concurrency: 2 });
  let running = 0;
  let most = 0;
  const held = gate();
  for (const key of ['a', 'b', 'c', 'd']) {
    queue.submit(key, '1', async () => {
      running++;
      most = Math.max(most, running);
      await held.opened;
      running--;
    });
  }
  assert.equal(running, 2);
  held.open();
  await queue.idle();
  assert.equal(most, 2);
});

test('a failing object waits its backoff, doubling, while the others run; it is retried by its timer', async () => {
  const timers = manualTimers();
  const { queue, errors } = work(timers);
  const runs: string[] = [];
  let failA = true;
  const submitAll = () => {
    for (const key of ['a', 'b']) {
      queue.submit(key, '1', async () => {
        runs.push(key);
        if (key === 'a' && failA) throw new Error('refused');
      });
    }
  };
  submitAll();
  await queue.idle();
  submitAll();
  await queue.idle();
  assert.deepEqual(runs, ['a', 'b', 'b']);
  assert.equal(queue.failing('a'), true);
  timers.next();
  await queue.idle();
  assert.deepEqual(errors, ['a 100', 'a 200']);
  failA = false;
  timers.next();
  await queue.idle();
  assert.deepEqual(runs, ['a', 'b', 'b', 'a', 'a']);
  assert.equal(queue.failing('a'), false);
  assert.deepEqual(timers.waits(), []);
});

test('a changed wish during a run runs once more after it; an unchanged one does not', async () => {
  const timers = manualTimers();
  const { queue } = work(timers);
  const runs: string[] = [];
  const held = gate();
  queue.submit('a', '1', async () => {
    runs.push('1');
    await held.opened;
  });
  queue.submit('a', '1', async () => void runs.push('1 again'));
  queue.submit('a', '2', async () => void runs.push('2'));
  queue.submit('a', '3', async () => void runs.push('3'));
  held.open();
  await queue.idle();
  await queue.idle();
  assert.deepEqual(runs, ['1', '3']);
});

test('a retained-out object is forgotten: its retry never runs', async () => {
  const timers = manualTimers();
  const { queue } = work(timers);
  let runs = 0;
  queue.submit('a', '1', async () => {
    runs++;
    throw new Error('no');
  });
  await queue.idle();
  queue.retain(new Set());
  assert.deepEqual(timers.waits(), []);
  assert.equal(runs, 1);
});

test('work is dropped, not failed, while it is not allowed', async () => {
  const timers = manualTimers();
  let allowed = false;
  const { queue, errors } = work(timers, { allowed: () => allowed });
  let runs = 0;
  queue.submit('a', '1', async () => void runs++);
  await queue.idle();
  assert.equal(runs, 0);
  allowed = true;
  queue.submit('a', '1', async () => void runs++);
  await queue.idle();
  assert.deepEqual([runs, errors], [1, []]);
});

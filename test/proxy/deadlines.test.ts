// Request deadlines kept in one list per timeout length: expiry order, cancelling, rescheduling.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { cancel, Deadline, schedule } from '../../src/proxy/deadlines.js';

function recorder(fired: string[], name: string, at?: Map<string, number>): Deadline {
  return new Deadline({
    timeout: () => {
      fired.push(name);
      at?.set(name, performance.now());
    },
  });
}

describe('deadlines', () => {
  it('expires deadlines in order, not before their time, skipping cancelled ones', async () => {
    const fired: string[] = [];
    // When each fired, read as it fires: a loaded machine may wake the test late, never the deadline early.
    const firedAt = new Map<string, number>();
    const start = performance.now();
    const a = recorder(fired, 'a', firedAt);
    const b = recorder(fired, 'b', firedAt);
    const c = recorder(fired, 'c', firedAt);
    schedule(a, 40, start);
    schedule(b, 40, start + 5);
    schedule(c, 40, start + 10);
    cancel(b);
    while (fired.length < 2 && performance.now() - start < 2000) await sleep(5);
    assert.deepEqual(fired, ['a', 'c']);
    assert.ok(firedAt.get('a')! >= start + 40, `a fired ${firedAt.get('a')! - start} ms after start`);
    assert.ok(firedAt.get('c')! >= start + 50, `c fired ${firedAt.get('c')! - start} ms after start`);
    await sleep(30);
    assert.deepEqual(fired, ['a', 'c'], 'each fires once');
  });

  it('reschedules a deadline and keeps lengths apart', async () => {
    const fired: string[] = [];
    const start = performance.now();
    const moved = recorder(fired, 'moved');
    const short = recorder(fired, 'short');
    schedule(moved, 15, start);
    // Rescheduled on a longer length: the first schedule no longer counts.
    schedule(moved, 60, start);
    schedule(short, 15, start);
    while (fired.length < 2 && performance.now() - start < 2000) await sleep(5);
    assert.deepEqual(fired, ['short', 'moved']);
    assert.ok(performance.now() - start >= 60);
  });

  it('lets a cancelled head go without firing, and fires the one after it on time', async () => {
    const fired: string[] = [];
    const start = performance.now();
    const first = recorder(fired, 'first');
    const second = recorder(fired, 'second');
    schedule(first, 25, start);
    schedule(second, 25, start + 20);
    cancel(first);
    while (fired.length < 1 && performance.now() - start < 2000) await sleep(5);
    assert.deepEqual(fired, ['second']);
    assert.ok(performance.now() - start >= 45);
  });
});

// The reset counts of one session and of one client address: pure logic, times given.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResetGuard, SourceResets } from '../../src/proxy/downstream/h2/reset-guard.js';

describe('ResetGuard', () => {
  it('goes over its bound within a window and starts afresh in the next', () => {
    const guard = new ResetGuard(2, 1000);
    assert.equal(guard.add(0), false);
    assert.equal(guard.add(10), false);
    assert.equal(guard.add(20), true);
    assert.equal(guard.over(999), true);
    assert.equal(guard.over(1000), false);
    assert.equal(guard.add(1000), false);
  });
});

describe('SourceResets', () => {
  it('refuses a source over its budget until its window ends, and no other source', () => {
    const sources = new SourceResets(3, 1000);
    for (let i = 0; i < 3; i++) assert.equal(sources.add('192.0.2.1', i), false);
    assert.equal(sources.refuses('192.0.2.1', 5), false);
    assert.equal(sources.add('192.0.2.1', 5), true);
    assert.equal(sources.refuses('192.0.2.1', 6), true);
    assert.equal(sources.refuses('192.0.2.2', 6), false);
    assert.equal(sources.refuses('192.0.2.1', 1000), false);
  });

  it('keeps at most its bound of sources, dropping those whose window passed, then the oldest', () => {
    const sources = new SourceResets(1, 1000, 3);
    sources.add('a', 0);
    sources.add('a', 1); // a over
    sources.add('b', 500);
    sources.add('b', 501); // b over
    sources.add('c', 600);
    // Full: 'a''s window has passed at 1200, so it goes and b stays.
    sources.add('d', 1200);
    assert.equal(sources.refuses('b', 1200), true);
    // Full again with none expired: the oldest ('b') goes to make room.
    sources.add('e', 1300);
    assert.equal(sources.refuses('b', 1300), false);
  });
});

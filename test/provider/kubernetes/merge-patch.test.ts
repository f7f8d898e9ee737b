// The merge patch a status write sends: applied by RFC 7386's rules it turns the object's status into ours, and
// it holds only what differs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergePatch } from '../../../src/provider/kubernetes/merge-patch.js';
import { applyMergePatch } from '../../support/apply-merge-patch.js';
import { random } from '../../translate/random-edits.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function randomValue(next: () => number, depth: number): Json {
  const roll = next();
  if (depth > 2 || roll < 0.3) return [1, 'a', true, 'b', 2][Math.floor(next() * 5)]!;
  if (roll < 0.5) return Array.from({ length: Math.floor(next() * 3) }, () => randomValue(next, depth + 1));
  const o: Record<string, Json> = {};
  for (const key of ['a', 'b', 'c', 'd']) if (next() < 0.5) o[key] = randomValue(next, depth + 1);
  return o;
}

test('applying the patch to the old value gives the new one, for random values', () => {
  const next = random(7);
  for (let i = 0; i < 2000; i++) {
    const before = randomValue(next, 0);
    const after = randomValue(next, 0);
    if (typeof before !== 'object' || before === null || Array.isArray(before)) continue;
    if (typeof after !== 'object' || after === null || Array.isArray(after)) continue;
    const patch = mergePatch(before, after);
    assert.deepEqual(applyMergePatch(before, patch ?? {}), after, JSON.stringify({ before, after, patch }));
    if (patch === undefined) assert.deepEqual(before, after);
  }
});

test('only what differs: an unchanged key is left out, a removed one is null, a changed list goes whole', () => {
  assert.deepEqual(
    mergePatch(
      { keep: { x: 1 }, gone: 1, list: [1, 2], nested: { a: 1, b: 2 } },
      { keep: { x: 1 }, list: [1, 3], nested: { a: 1, b: 3 } },
    ),
    { gone: null, list: [1, 3], nested: { b: 3 } },
  );
  assert.equal(mergePatch({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }), undefined);
});

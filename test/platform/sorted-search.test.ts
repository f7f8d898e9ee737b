import assert from 'node:assert/strict';
import { test } from 'node:test';
import { insertionIndex, partitionPoint } from '../../src/platform/sorted-search.js';

const byNumber = (a: number, b: number) => a - b;

test('partitionPoint and insertionIndex agree with a linear scan on random sorted lists, duplicates and edges included', () => {
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let round = 0; round < 500; round++) {
    const list = Array.from({ length: random(20) }, () => random(10)).sort(byNumber);
    const probe = random(12) - 1;
    const firstNotBelow = list.findIndex((v) => v >= probe);
    const expected = firstNotBelow === -1 ? list.length : firstNotBelow;
    assert.equal(insertionIndex(list, probe, byNumber), expected, `${probe} in [${list}]`);
    const firstAbove = list.findIndex((v) => v > probe);
    const upper = partitionPoint(list.length, (i) => list[i]! <= probe);
    assert.equal(upper, firstAbove === -1 ? list.length : firstAbove, `past ${probe} in [${list}]`);
  }
  assert.equal(
    partitionPoint(0, () => true),
    0,
  );
});

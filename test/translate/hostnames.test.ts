import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  compareSpecificity,
  effectiveHostnames,
  intersectHostnames,
  originalHostnameRank,
} from '../../src/translate/hostnames.js';

test('intersection: exact, wildcard over exact, wildcard vs wildcard, disjoint', () => {
  assert.equal(intersectHostnames('a.example.com', 'a.example.com'), 'a.example.com');
  assert.equal(intersectHostnames('*.example.com', 'a.b.example.com'), 'a.b.example.com');
  assert.equal(intersectHostnames('a.example.com', '*.example.com'), 'a.example.com');
  assert.equal(intersectHostnames('*.example.com', '*.foo.example.com'), '*.foo.example.com');
  assert.equal(intersectHostnames('*.example.com', '*.example.com'), '*.example.com');
  assert.equal(intersectHostnames('*.example.com', 'example.com'), undefined);
  assert.equal(intersectHostnames('*.example.com', '*.example.org'), undefined);
  assert.equal(intersectHostnames('*.example.com', 'xexample.com'), undefined);
});

test('effective hostnames of listener and route', () => {
  assert.deepEqual(effectiveHostnames(undefined, []), ['*']);
  assert.deepEqual(effectiveHostnames('a.example.com', []), ['a.example.com']);
  assert.deepEqual(effectiveHostnames(undefined, ['x.io', '*.y.io']), ['x.io', '*.y.io']);
  assert.deepEqual(effectiveHostnames('*.example.com', ['a.example.com', 'b.other.com', '*.com']), [
    'a.example.com',
    '*.example.com',
  ]);
});

test('specificity: exact, longer wildcard, shorter wildcard, any', () => {
  const sorted = ['*', '*.com', 'b.example.com', '*.example.com', 'a.example.com'].sort(compareSpecificity);
  assert.deepEqual(sorted, ['a.example.com', 'b.example.com', '*.example.com', '*.com', '*']);
});

test('route precedence ranks a route by its own hostnames, not their intersection with the listener', () => {
  // A listener for abc.example.com: both routes intersect to abc.example.com; the exact one ranks first.
  const exact = originalHostnameRank(['abc.example.com'], 'abc.example.com');
  const wildcard = originalHostnameRank(['*.example.com'], 'abc.example.com');
  const wider = originalHostnameRank(['*.com'], 'abc.example.com');
  const none = originalHostnameRank([], 'abc.example.com');
  assert.ok(exact > wildcard && wildcard > wider && wider > none, `${exact} ${wildcard} ${wider} ${none}`);
  // A listener for *.example.com: the narrower route wildcard ranks first.
  assert.ok(
    originalHostnameRank(['*.example.com'], '*.example.com') >
      originalHostnameRank(['*.com'], '*.example.com'),
  );
  // Only hostnames that match count: an unrelated longer one does not lift a route.
  assert.equal(originalHostnameRank(['*.com', 'a-very-long-name.example.org'], 'abc.example.com'), wider);
});

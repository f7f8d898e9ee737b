import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ageSince, formatAge, formatTable } from '../../src/cli/output.js';

test('tables pad every column but the last by three spaces, at least six wide', () => {
  const out = formatTable(
    ['NAME', 'CLASS', 'ADDRESS', 'PROGRAMMED', 'AGE'],
    [
      ['eg', 'eg', '127.0.1.1', 'True', '5s'],
      ['a-much-longer-name', 'x', '', 'Unknown', '3m12s'],
    ],
  );
  assert.equal(
    out,
    [
      'NAME                 CLASS   ADDRESS     PROGRAMMED   AGE',
      'eg                   eg      127.0.1.1   True         5s',
      'a-much-longer-name   x                   Unknown      3m12s',
      '',
    ].join('\n'),
  );
});

test('a one-letter column still takes the minimum width', () => {
  assert.equal(formatTable(['A', 'B'], [['x', 'y']]), 'A     B\nx     y\n');
});

test('ages read like kubectl', () => {
  const s = 1000;
  const m = 60 * s;
  const h = 60 * m;
  const d = 24 * h;
  const cases: [number, string][] = [
    [-3 * s, '<invalid>'],
    [-1500, '0s'],
    [0, '0s'],
    [45 * s, '45s'],
    [119 * s, '119s'],
    [2 * m, '2m'],
    [3 * m + 12 * s, '3m12s'],
    [9 * m + 59 * s, '9m59s'],
    [10 * m + 30 * s, '10m'],
    [179 * m, '179m'],
    [3 * h, '3h'],
    [5 * h + 7 * m, '5h7m'],
    [8 * h + 30 * m, '8h'],
    [47 * h, '47h'],
    [2 * d, '2d'],
    [2 * d + 3 * h, '2d3h'],
    [8 * d + 5 * h, '8d'],
    [400 * d, '400d'],
    [3 * 365 * d + 20 * d, '3y20d'],
    [9 * 365 * d, '9y'],
  ];
  for (const [ms, expected] of cases) assert.equal(formatAge(ms), expected, `${ms} ms`);
});

test('an age from a timestamp, unknown when absent or unreadable', () => {
  const now = Date.parse('2026-01-01T00:10:00Z');
  assert.equal(ageSince('2026-01-01T00:00:00Z', now), '10m');
  assert.equal(ageSince(undefined, now), '<unknown>');
  assert.equal(ageSince('yesterday-ish', now), '<unknown>');
});

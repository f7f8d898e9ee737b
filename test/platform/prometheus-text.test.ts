// The one Prometheus text writer: heads, samples with and without labels, and label values escaped.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { family, sampleLine } from '../../src/platform/prometheus-text.js';

test('a family is its HELP and TYPE lines, then a line per sample, label values escaped', () => {
  assert.deepEqual(
    family('x_total', 'counter', 'Things.', [
      [undefined, 1],
      [{ a: 'plain', b: 'q"uote\\back\nline' }, 2.5],
    ]),
    [
      '# HELP x_total Things.',
      '# TYPE x_total counter',
      'x_total 1',
      'x_total{a="plain",b="q\\"uote\\\\back\\nline"} 2.5',
    ],
  );
  assert.equal(sampleLine('y', {}, 0), 'y 0');
});

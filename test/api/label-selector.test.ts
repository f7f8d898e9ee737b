// Kubernetes label selector semantics: matchLabels and every matchExpressions operator, all must hold.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { selectorMatches } from '../../src/api/label-selector.js';

test('a label selector holds only when its labels and every expression hold', () => {
  const labels = { team: 'a', tier: 'web' };
  assert.equal(selectorMatches({}, labels), true);
  assert.equal(selectorMatches({ matchLabels: { team: 'a' } }, labels), true);
  assert.equal(selectorMatches({ matchLabels: { team: 'b' } }, labels), false);
  const expression = (
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist',
    key: string,
    values?: string[],
  ) => ({
    matchExpressions: [{ key, operator, ...(values === undefined ? {} : { values }) }],
  });
  assert.equal(selectorMatches(expression('In', 'tier', ['web', 'api']), labels), true);
  assert.equal(selectorMatches(expression('In', 'zone', ['x']), labels), false);
  assert.equal(selectorMatches(expression('NotIn', 'tier', ['web']), labels), false);
  assert.equal(selectorMatches(expression('NotIn', 'zone', ['x']), labels), true);
  assert.equal(selectorMatches(expression('Exists', 'team'), labels), true);
  assert.equal(selectorMatches(expression('Exists', 'zone'), labels), false);
  assert.equal(selectorMatches(expression('DoesNotExist', 'zone'), labels), true);
  assert.equal(selectorMatches(expression('DoesNotExist', 'team'), labels), false);
  // An inherited name is not a label.
  assert.equal(selectorMatches(expression('Exists', 'constructor'), labels), false);
});

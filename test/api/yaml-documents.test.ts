// Hostile YAML: aliases, self-references and deep nesting become errors with a line; nothing throws or crashes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatResourceError } from '../../src/api/common.js';
import { parseYamlFile } from '../../src/api/load.js';
import { MAX_YAML_NESTING } from '../../src/api/yaml-documents.js';

const NAMESPACE = (name: string) => `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n`;

test('a benign file with more than 100 alias references loads', () => {
  const labels = Array.from({ length: 150 }, (_, i) => `    l${i}: *team`).join('\n');
  const text = `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  annotations: {owner: &team payments}\n  labels:\n${labels}\n`;
  const r = parseYamlFile('aliases.yaml', text);
  assert.deepEqual(r.errors, []);
  assert.equal(r.objects[0]?.object.metadata.labels?.l149, 'payments');
});

test('an exponential alias expansion is an error naming file and line; the other documents load', () => {
  const levels = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 9; i++) {
    const prev = String.fromCharCode(96 + i);
    levels.push(
      `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10).fill(`*${prev}`).join(', ')}]`,
    );
  }
  const bomb = `apiVersion: v1\nkind: Namespace\nmetadata: {name: bomb}\nspec:\n  ${levels.join('\n  ')}\n`;
  // Expanded, the bomb is 10^9 values: a parser that expanded it would not return (the runner's timeout fails it).
  const r = parseYamlFile('laughs.yaml', `${NAMESPACE('before')}---\n${bomb}---\n${NAMESPACE('after')}`);
  assert.deepEqual(
    r.objects.map((o) => o.object.metadata.name),
    ['before', 'after'],
  );
  assert.deepEqual(r.errors.map(formatResourceError), [
    'laughs.yaml:6: YAML: the document expands to more than 1,000,000 values through aliases',
  ]);
});

test('an alias that refers to its own collection is an error, not a stack overflow later', () => {
  const r = parseYamlFile('loop.yaml', `${NAMESPACE('x')}  labels: &l\n    self: *l\n`);
  assert.equal(r.objects.length, 0);
  assert.deepEqual(r.errors.map(formatResourceError), [
    'loop.yaml:1: YAML: an alias refers to a collection that contains it',
  ]);
});

test('collections nested too deep are refused before parsing recurses into them, every time', () => {
  // Parsed twice: a second deep document used to abort the whole process inside the parser.
  for (const depth of [MAX_YAML_NESTING + 1, 20_000]) {
    const deep = `apiVersion: v1\nkind: Namespace\nmetadata: {name: deep}\nspec: ${'['.repeat(depth)}${']'.repeat(depth)}\n`;
    const r = parseYamlFile('deep.yaml', `${NAMESPACE('ok')}---\n${deep}`);
    assert.deepEqual(
      r.objects.map((o) => o.object.metadata.name),
      ['ok'],
    );
    assert.deepEqual(r.errors.map(formatResourceError), [
      `deep.yaml:5: YAML: collections nest deeper than ${MAX_YAML_NESTING} levels`,
    ]);
  }
});

test('an alias to an anchor defined later is an error with its line', () => {
  const r = parseYamlFile('order.yaml', `${NAMESPACE('a')}---\n${NAMESPACE('b')}  labels: {x: *later}\n`);
  assert.deepEqual(
    r.objects.map((o) => o.object.metadata.name),
    ['a'],
  );
  assert.equal(r.errors.length, 1);
  assert.match(formatResourceError(r.errors[0]!), /^order\.yaml:6: YAML: /);
});

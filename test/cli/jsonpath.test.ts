// The JSONPath evaluator behind `get -o jsonpath=`: kubectl's output for the templates people write.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JsonPathError, parseJsonPath } from '../../src/cli/jsonpath.js';

const LIST = {
  kind: 'List',
  items: [
    {
      metadata: { name: 'eg', namespace: 'default', labels: { 'app.kubernetes.io/name': 'web' } },
      spec: {
        listeners: [
          { name: 'http', port: 80 },
          { name: 'https', port: 443 },
        ],
      },
      status: {
        addresses: [{ value: '127.0.1.1' }],
        conditions: [
          { type: 'Accepted', status: 'True' },
          { type: 'Programmed', status: 'False', reason: 'Pending' },
        ],
      },
    },
    {
      metadata: { name: 'other', namespace: 'team-a' },
      spec: { listeners: [{ name: 'http', port: 8080 }] },
      status: { conditions: [{ type: 'Programmed', status: 'True' }] },
    },
  ],
};

function run(template: string, value: unknown = LIST): string {
  return parseJsonPath(template).run(value);
}

test('field paths print strings as they are; several results are joined by a space', () => {
  assert.equal(run('{.kind}'), 'List');
  assert.equal(run('{.items[*].metadata.name}'), 'eg other');
  assert.equal(run('{$.items[0].metadata.namespace}'), 'default');
  assert.equal(run('{.items[0].spec.listeners[1].port}'), '443');
  assert.equal(run('{.items[-1].metadata.name}'), 'other');
  assert.equal(run('{.items[*].spec.listeners[*].port}'), '80 443 8080');
});

test('text outside braces is kept, and quoted text takes JSON escapes', () => {
  assert.equal(run('names: {.items[*].metadata.name}{"\\n"}'), 'names: eg other\n');
  assert.equal(run(`{"a\\tb"}{'c'}`), 'a\tbc');
});

test('range repeats its body for each result, relative to the element', () => {
  assert.equal(
    run('{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}'),
    'default/eg\nteam-a/other\n',
  );
  assert.equal(
    run('{range .items[*]}{.metadata.name}:{range .spec.listeners[*]} {.port}{end};{end}'),
    'eg: 80 443;other: 8080;',
  );
  // `$` inside a range still reaches the whole object.
  assert.equal(run('{range .items[*]}{$.kind}{end}'), 'ListList');
});

test('filters pick list elements by a field: equality, inequality, order, existence', () => {
  assert.equal(run('{.items[*].status.conditions[?(@.type=="Programmed")].status}'), 'False True');
  assert.equal(run(`{.items[?(@.metadata.name!='eg')].metadata.name}`), 'other');
  assert.equal(run('{.items[0].spec.listeners[?(@.port > 100)].name}'), 'https');
  assert.equal(run('{.items[0].spec.listeners[?(@.port<=80)].name}'), 'http');
  assert.equal(run('{.items[?(@.status.addresses)].metadata.name}'), 'eg');
  assert.equal(run('{.items[*].status.conditions[?(@.reason)].reason}'), 'Pending');
});

test('objects and lists print as JSON; missing fields print nothing', () => {
  assert.equal(run('{.items[0].status.addresses}'), '[{"value":"127.0.1.1"}]');
  assert.equal(run('{.items[1].metadata}'), '{"name":"other","namespace":"team-a"}');
  assert.equal(run('[{.items[1].status.addresses[0].value}]'), '[]');
  assert.equal(run('{.nothing.here}{.items[7]}{.kind.deeper}'), '');
});

test('slices, unions, wildcards on objects, quoted and escaped names, recursive descent', () => {
  assert.equal(run('{.items[0].spec.listeners[0:1].name}'), 'http');
  assert.equal(
    run('{.items[*].spec.listeners[::-1].port}', LIST.items[0] && { items: [LIST.items[0]] }),
    '443 80',
  );
  assert.equal(run('{.items[0].spec.listeners[0,1].name}'), 'http https');
  assert.equal(run(`{.items[0].metadata['name','namespace']}`), 'eg default');
  assert.equal(run('{.items[0].metadata.labels.app\\.kubernetes\\.io/name}'), 'web');
  assert.equal(run(`{.items[0].metadata.labels['app.kubernetes.io/name']}`), 'web');
  assert.equal(run('{.items[0].status.addresses[0].*}'), '127.0.1.1');
  assert.equal(run('{..port}'), '80 443 8080');
  assert.equal(run('{@.kind}{.}', 'x'), 'x');
});

test('a template that does not parse names the column of the problem', () => {
  const cases: [string, number, RegExp][] = [
    ['{.items[*].metadata.name', 1, /never closed/],
    ['{.items[*}', 10, /expected '\]' to close the '\[' at column 8/],
    ['{range .items[*]}{.x}', 1, /\{range\} opened at column 1 has no \{end\}/],
    ['{.a}{end}', 5, /\{end\} without a \{range\}/],
    ['{.items[?(@.x==)]}', 16, /quoted string, a number/],
    ['{.items[?(@.x="y")]}', 14, /expected '\)' or a comparison/],
    ['{.items[?(@.x == "y"]}', 21, /expected '\)'/],
    ['{"abc}', 2, /string opened at column 2 is never closed/],
    ['{items}', 2, /path starting with '\.', '@' or '\$'/],
    ['{.a b}', 5, /unexpected 'b'/],
    ['{.items[1::0]}', 13, /step cannot be 0/],
  ];
  for (const [template, column, message] of cases) {
    assert.throws(
      () => parseJsonPath(template),
      (error: unknown) => {
        assert.ok(error instanceof JsonPathError, template);
        assert.equal(error.column, column, `${template}: ${error.message}`);
        assert.match(error.message, message, template);
        assert.match(error.message, new RegExp(`^column ${column}: `), template);
        return true;
      },
    );
  }
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { accessLogOption } from '../../src/cli/access-log-option.js';
import { ACCESS_LOG_FIELDS } from '../../src/ir/access-log.js';

test('portico proxy logs every request as JSON with every field unless told otherwise', () => {
  assert.deepEqual(accessLogOption('json', undefined, '100'), {
    format: 'json',
    fields: [...ACCESS_LOG_FIELDS],
    sampling: 1,
  });
  assert.equal(accessLogOption('off', 'nonsense', 'x'), undefined);
  assert.deepEqual(accessLogOption('text', 'status, path', '2.5'), {
    format: 'text',
    fields: ['status', 'path'],
    sampling: 0.025,
  });
});

test('a bad access log flag is an error that names the flag', () => {
  assert.throws(
    () => accessLogOption('xml', undefined, '100'),
    /--access-log: expected json, text or off, got 'xml'/,
  );
  assert.throws(
    () => accessLogOption('json', 'status,agent', '100'),
    /--access-log-fields: unknown access log field 'agent'/,
  );
  assert.throws(
    () => accessLogOption('json', undefined, '101'),
    /--access-log-sampling: expected a percentage/,
  );
  assert.throws(() => accessLogOption('json', undefined, ''), /--access-log-sampling/);
});

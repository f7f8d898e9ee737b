import assert from 'node:assert/strict';
import { test } from 'node:test';
import { accessLogOption, tracingOption } from '../../src/cli/telemetry-options.js';
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

test('--access-log-redact-query names the query parameters a line redacts', () => {
  assert.deepEqual(accessLogOption('json', 'path', '100', 'token, api_key'), {
    format: 'json',
    fields: ['path'],
    sampling: 1,
    redactQuery: ['token', 'api_key'],
  });
  assert.throws(
    () => accessLogOption('json', undefined, '100', 'token,,key'),
    /--access-log-redact-query: expected at most 32 names of 1 to 128 characters/,
  );
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

test('portico proxy traces only when given a collector, sampling every trace it starts unless told', () => {
  assert.equal(tracingOption(undefined, '100'), undefined);
  assert.deepEqual(tracingOption('http://collector.observability:4318/v1/traces', '100'), {
    endpoint: 'http://collector.observability:4318/v1/traces',
    sampling: 1,
  });
  assert.equal(tracingOption('https://collector/v1/traces', '10')?.sampling, 0.1);
});

test('a bad tracing flag is an error that names the flag', () => {
  assert.throws(() => tracingOption('collector:4318', '100'), /--tracing-endpoint: expected an http/);
  assert.throws(() => tracingOption('not a url', '100'), /--tracing-endpoint: not a URL/);
  assert.throws(
    () => tracingOption('http://user:secret@collector/v1/traces', '100'),
    /--tracing-endpoint: credentials do not belong in the URL/,
  );
  assert.throws(() => tracingOption(undefined, 'all'), /--tracing-sampling: expected a percentage/);
});

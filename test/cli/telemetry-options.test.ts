// `portico proxy`'s telemetry flags as the runtime's options (parsed by the table in ir/proxy-flags.ts), and a bad
// value refused with an error naming its flag.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { proxyRuntimeOptions } from '../../src/cli/proxy.js';
import { ACCESS_LOG_FIELDS } from '../../src/ir/access-log.js';

function options(...flags: string[]) {
  return proxyRuntimeOptions(['--config-file', 'fleet.json', '--workers', '1', ...flags]);
}

test('portico proxy logs every request as JSON with every field unless told otherwise', () => {
  assert.deepEqual(options().accessLog, { format: 'json', fields: [...ACCESS_LOG_FIELDS], sampling: 1 });
  assert.equal(options('--access-log', 'off').accessLog, undefined);
  assert.deepEqual(
    options('--access-log', 'text', '--access-log-fields', 'status, path', '--access-log-sampling', '2.5')
      .accessLog,
    { format: 'text', fields: ['status', 'path'], sampling: 0.025 },
  );
});

test('--access-log-redact-query names the query parameters a line redacts', () => {
  assert.deepEqual(
    options('--access-log-fields', 'path', '--access-log-redact-query', 'token, api_key').accessLog,
    { format: 'json', fields: ['path'], sampling: 1, redactQuery: ['token', 'api_key'] },
  );
  assert.throws(
    () => options('--access-log-redact-query', 'token,,key'),
    /--access-log-redact-query: expected at most 32 names of 1 to 128 characters/,
  );
});

test('a bad access log flag is an error that names the flag', () => {
  assert.throws(() => options('--access-log', 'xml'), /--access-log: expected json, text or off, got 'xml'/);
  assert.throws(
    () => options('--access-log-fields', 'status,agent'),
    /--access-log-fields: unknown access log field 'agent'/,
  );
  assert.throws(
    () => options('--access-log-sampling', '101'),
    /--access-log-sampling: expected a percentage/,
  );
  assert.throws(() => options('--access-log-sampling', ''), /--access-log-sampling/);
});

test('portico proxy traces only when given a collector, sampling every trace it starts unless told', () => {
  assert.equal(options().tracing, undefined);
  assert.deepEqual(options('--tracing-endpoint', 'http://collector.observability:4318/v1/traces').tracing, {
    endpoint: 'http://collector.observability:4318/v1/traces',
    sampling: 1,
  });
  assert.equal(
    options('--tracing-endpoint', 'https://collector/v1/traces', '--tracing-sampling', '10').tracing
      ?.sampling,
    0.1,
  );
});

test('a bad tracing flag is an error that names the flag', () => {
  assert.throws(
    () => options('--tracing-endpoint', 'collector:4318'),
    /--tracing-endpoint: expected an http/,
  );
  assert.throws(() => options('--tracing-endpoint', 'not a url'), /--tracing-endpoint: not a URL/);
  assert.throws(
    () => options('--tracing-endpoint', 'http://user:secret@collector/v1/traces'),
    /--tracing-endpoint: credentials do not belong in the URL/,
  );
  assert.throws(() => options('--tracing-sampling', 'all'), /--tracing-sampling: expected a percentage/);
});

test('a bad drain, workers or log level flag is an error that names the flag', () => {
  assert.throws(() => options('--drain-seconds=-1'), /--drain-seconds: expected seconds, got '-1'/);
  assert.throws(() => options('--max-drain-seconds', 'soon'), /--max-drain-seconds: expected seconds/);
  assert.throws(() => options('--workers', '1.5'), /--workers: expected a whole number from 1 to 1024/);
  assert.throws(() => options('--log-level', 'loud'), /--log-level: 'loud' is not debug, info, warn, error/);
});

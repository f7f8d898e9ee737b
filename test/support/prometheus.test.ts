import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePrometheus, sampleValue } from './prometheus.js';

const TEXT = [
  '# HELP portico_requests_total Requests.',
  '# TYPE portico_requests_total counter',
  'portico_requests_total{listener="http",route="ns/r/rule/0/match/0",code="200"} 3',
  'portico_requests_total{listener="http",route="a\\"b\\\\c",code="404"} 1',
  '# TYPE portico_translate_seconds summary',
  'portico_translate_seconds_sum 0.25',
  'portico_translate_seconds_count 2',
  '# TYPE portico_duration histogram',
  'portico_duration_bucket{le="+Inf"} 2',
  '',
].join('\n');

test('samples with labels, escapes, summary and histogram suffixes are read', () => {
  const samples = parsePrometheus(TEXT);
  assert.equal(samples.length, 5);
  assert.equal(sampleValue(samples, 'portico_requests_total', { code: '200' }), 3);
  assert.equal(sampleValue(samples, 'portico_requests_total', { route: 'a"b\\c' }), 1);
  assert.equal(sampleValue(samples, 'portico_translate_seconds_sum'), 0.25);
  assert.equal(sampleValue(samples, 'portico_duration_bucket', { le: '+Inf' }), 2);
  assert.equal(sampleValue(samples, 'portico_missing'), undefined);
  assert.throws(() => sampleValue(samples, 'portico_requests_total'), /2 samples/);
});

test('malformed exposition text is rejected with its line', () => {
  assert.throws(() => parsePrometheus('portico_x 1\n'), /line 1: portico_x has no # TYPE/);
  assert.throws(() => parsePrometheus('# TYPE portico_x counter\nportico_x one\n'), /line 2: value "one"/);
  assert.throws(() => parsePrometheus('# TYPE portico_x counter\nportico_x{a=1} 1\n'), /line 2: bad label/);
  assert.throws(() => parsePrometheus('# TYPE portico_x countr\n'), /line 1: unknown type/);
  assert.throws(() => parsePrometheus('# TYPE portico_x counter\nportico_x  1\n'), /line 2: bad sample/);
});

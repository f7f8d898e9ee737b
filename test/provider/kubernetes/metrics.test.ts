import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMetrics, formatMetrics, processSample } from '../../../src/provider/kubernetes/metrics.js';

test('the controller reports its own memory and CPU beside its counters, in the process collector names', () => {
  const metrics = createMetrics();
  metrics.reconciles = 3;
  metrics.translations.changedRoutes = 2;
  const text = formatMetrics(metrics, { residentBytes: 123456, heapUsedBytes: 4567, cpuSeconds: 1.5 });
  assert.match(text, /^portico_reconciles_total 3$/m);
  assert.match(text, /^portico_translations_total\{path="changed_routes"\} 2$/m);
  assert.match(text, /^portico_translations_total\{path="full"\} 0$/m);
  assert.match(text, /^# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 123456$/m);
  assert.match(text, /^nodejs_heap_size_used_bytes 4567$/m);
  assert.match(text, /^# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1\.5$/m);
});

test('a live sample is this process: resident memory above its heap, CPU time counting up', () => {
  const first = processSample();
  let spin = 0;
  for (let i = 0; i < 2e6; i++) spin += i;
  const second = processSample();
  assert.ok(spin > 0);
  assert.ok(first.residentBytes > first.heapUsedBytes && first.heapUsedBytes > 0);
  assert.ok(second.cpuSeconds > first.cpuSeconds);
});

test('the status write rate limit is reported with how long writes waited for it', () => {
  const metrics = createMetrics();
  metrics.statusWriteRate = {
    limit: { perSecond: 50, burst: 80 },
    waitedSeconds: () => 2.5,
    waiting: () => 7,
  };
  const text = formatMetrics(metrics, { residentBytes: 1, heapUsedBytes: 1, cpuSeconds: 1 });
  assert.match(text, /^portico_status_write_limit\{limit="qps"\} 50$/m);
  assert.match(text, /^portico_status_write_limit\{limit="burst"\} 80$/m);
  assert.match(text, /^portico_status_write_wait_seconds_total 2\.5$/m);
  assert.match(text, /^portico_status_write_requests_waiting 7$/m);
});

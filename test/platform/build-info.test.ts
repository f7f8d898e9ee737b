// The build a process says it is: package.json's version and the running Node, also as a Prometheus gauge.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { buildInfo, buildInfoMetric } from '../../src/platform/build-info.js';
import { parsePrometheus } from '../support/prometheus.js';

test('portico_build_info carries the package version and the Node version, valued 1', () => {
  const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
  assert.deepEqual(buildInfo(), { version, node: process.version });
  const samples = parsePrometheus(`${buildInfoMetric()}\n`);
  assert.deepEqual(
    samples.map((s) => ({ name: s.name, labels: s.labels, value: s.value })),
    [{ name: 'portico_build_info', labels: { version, node: process.version }, value: 1 }],
  );
});

// The default worker count reads the container's CPU limit the way cgroups v1 and v2 write it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { quotaFromCfs, quotaFromCpuMax } from '../../src/proxy/workers/cpu-count.js';

test('cgroup v2 cpu.max: a quota over a period, or none', () => {
  assert.equal(quotaFromCpuMax('200000 100000'), 2);
  assert.equal(quotaFromCpuMax('150000 100000'), 1.5);
  assert.equal(quotaFromCpuMax('max 100000'), undefined);
  assert.equal(quotaFromCpuMax(undefined), undefined);
  assert.equal(quotaFromCpuMax(''), undefined);
});

test('cgroup v1 cfs quota and period: -1 is no limit', () => {
  assert.equal(quotaFromCfs('200000', '100000'), 2);
  assert.equal(quotaFromCfs('50000', '100000'), 0.5);
  assert.equal(quotaFromCfs('-1', '100000'), undefined);
  assert.equal(quotaFromCfs(undefined, '100000'), undefined);
  assert.equal(quotaFromCfs('100000', '0'), undefined);
});

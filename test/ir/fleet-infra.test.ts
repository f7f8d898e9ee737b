import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fleetInfraName } from '../../src/ir/fleet-infra.js';

test('fleetInfraName: the two examples of DESIGN.md §1', () => {
  assert.equal(fleetInfraName('default/eg'), 'proxy-default-eg-e41e7b31');
  assert.equal(fleetInfraName('merged-eg'), 'proxy-merged-eg-668ac7ae');
});

test('fleetInfraName: long keys are cut to 48 characters without a trailing dash, within 63', () => {
  const name = fleetInfraName(`${'a'.repeat(47)}/${'b'.repeat(60)}`);
  assert.match(name, /^proxy-a{47}-[0-9a-f]{8}$/);
  assert.ok(name.length <= 63);
});

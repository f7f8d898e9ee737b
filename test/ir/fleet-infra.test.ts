import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fleetInfraName, labelValue } from '../../src/ir/fleet-infra.js';

test('fleetInfraName: the two examples of DESIGN.md §1', () => {
  assert.equal(fleetInfraName('default/eg'), 'proxy-default-eg-e41e7b31');
  assert.equal(fleetInfraName('merged-eg'), 'proxy-merged-eg-668ac7ae');
});

test('fleetInfraName: long keys are cut to 48 characters without a trailing dash, within 63', () => {
  const name = fleetInfraName(`${'a'.repeat(47)}/${'b'.repeat(60)}`);
  assert.match(name, /^proxy-a{47}-[0-9a-f]{8}$/);
  assert.ok(name.length <= 63);
});

const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

test('labelValue: a name that fits is itself', () => {
  assert.equal(labelValue('eg'), 'eg');
  const fits = 'x'.repeat(63);
  assert.equal(labelValue(fits), fits);
});

test('labelValue: a 253-character name becomes a valid value of 63, and names differing only at the end differ', () => {
  const a = `gateway-name-maximum-length-${'a'.repeat(225)}`;
  const b = `${a.slice(0, -1)}b`;
  for (const name of [a, b]) {
    const value = labelValue(name);
    assert.equal(value.length, 63);
    assert.match(value, LABEL_VALUE);
    assert.ok(value.startsWith(name.slice(0, 54)));
  }
  assert.notEqual(labelValue(a), labelValue(b));
});

test('labelValue: a cut that would end in a dash or dot ends alphanumeric', () => {
  const name = `${'a'.repeat(52)}.-${'b'.repeat(100)}`;
  const value = labelValue(name);
  assert.match(value, LABEL_VALUE);
  assert.match(value, /^a{52}-[0-9a-f]{8}$/);
});

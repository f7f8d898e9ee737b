import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_FLEET_CERTIFICATE_LIFETIME,
  needsRenewal,
  nextRenewalAt,
  parseLifetime,
  renewalDueAt,
} from '../../src/certificates/fleet-certificate-lifetime.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 10, 25, 12, 0, 0);

test('a certificate is due two thirds into its life, not before', () => {
  const validity = { notBefore: T0, notAfter: T0 + 6 * DAY };
  assert.equal(renewalDueAt(validity), T0 + 4 * DAY);
  assert.equal(needsRenewal(validity, T0), false);
  assert.equal(needsRenewal(validity, T0 + 4 * DAY - 1), false);
  assert.equal(needsRenewal(validity, T0 + 4 * DAY), true);
  assert.equal(needsRenewal(validity, T0 + 7 * DAY), true, 'expired: renewed too');
  assert.equal(needsRenewal(validity, T0 - 1), true, 'not valid yet (a clock moved back): renewed');
});

test('the default: 7 days, renewed after about 4.7, leaving over 2 days for a controller outage', () => {
  const { lifetimeMs, graceMs } = DEFAULT_FLEET_CERTIFICATE_LIFETIME;
  assert.equal(lifetimeMs, 7 * DAY);
  // Issued certificates are backdated an hour for clock skew.
  const validity = { notBefore: T0 - HOUR, notAfter: T0 + lifetimeMs };
  const due = renewalDueAt(validity);
  assert.ok(due - T0 > 4.6 * DAY && due - T0 < 4.7 * DAY, `${(due - T0) / DAY} days`);
  assert.ok(validity.notAfter - due > 2 * DAY, 'a weekend without a controller expires nothing');
  assert.equal(graceMs, 5 * 60_000);
});

test('the next renewal is the earliest among the certificates', () => {
  assert.equal(nextRenewalAt([]), undefined);
  const soon = { notBefore: T0, notAfter: T0 + 3 * HOUR };
  const later = { notBefore: T0, notAfter: T0 + 3 * DAY };
  assert.equal(nextRenewalAt([later, soon]), T0 + 2 * HOUR);
});

test('lifetimes are written as a whole number of days, hours or minutes', () => {
  assert.equal(parseLifetime('7d'), 7 * DAY);
  assert.equal(parseLifetime('36h'), 36 * HOUR);
  assert.equal(parseLifetime('90m'), 90 * 60_000);
  for (const bad of ['', '7', 'd', '1.5d', '-1d', '7w', '7 days'])
    assert.equal(parseLifetime(bad), undefined, bad);
});

test('a certificate living longer than the lifetime now given (an earlier version’s 730 days) is due at once', () => {
  const old = { notBefore: T0 - HOUR, notAfter: T0 + 730 * DAY };
  assert.equal(needsRenewal(old, T0), false, 'by its own schedule, not for a long while');
  assert.equal(needsRenewal(old, T0, 7 * DAY), true);
  const fresh = { notBefore: T0 - HOUR, notAfter: T0 + 7 * DAY };
  assert.equal(needsRenewal(fresh, T0, 7 * DAY), false, 'one just issued with that lifetime is not');
  assert.equal(needsRenewal(fresh, T0 - 30_000, 7 * DAY), false, 'nor within the second-rounding tolerance');
});

// Basic auth keeps the credentials that matched, so a client's repeated user and password are not bcrypt-checked
// again at once (tens of milliseconds of CPU each): what it keeps never lets through what a fresh check refuses
// (another password, another user, a wrong one however often sent), and lapses after its time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import bcrypt from 'bcryptjs';
import { basicAuthStep, passwordMatches } from '../../../src/proxy/access/credentials.js';
import type { StepOutcome } from '../../../src/proxy/access/step.js';
import { accessRequest } from '../../support/access-request.js';

const basic = (user: string, password: string) =>
  accessRequest({
    headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` },
  });

test('a matched user and password are checked once, until their time; a wrong one every time', async () => {
  const users = [
    { user: 'alice', credentialDigest: bcrypt.hashSync('alice-secret', 4) },
    { user: 'bob', credentialDigest: bcrypt.hashSync('bob-secret', 4) },
  ];
  let clock = 1_000_000;
  let checks = 0;
  const step = basicAuthStep(users, {
    now: () => clock,
    matches: (password, hash) => {
      checks++;
      return passwordMatches(password, hash);
    },
  });
  const allowed = async (user: string, password: string) =>
    ((await step.check(basic(user, password), {})) as StepOutcome).allow;

  assert.equal(await allowed('alice', 'alice-secret'), true);
  assert.equal(checks, 1);
  assert.equal(await allowed('alice', 'alice-secret'), true);
  assert.equal(checks, 1, 'the repeated credentials were not checked again');
  // Another user, another password, a wrong password: each checked afresh, the wrong one refused every time.
  assert.equal(await allowed('bob', 'bob-secret'), true);
  assert.equal(checks, 2);
  assert.equal(await allowed('alice', 'bob-secret'), false);
  assert.equal(await allowed('alice', 'bob-secret'), false);
  assert.equal(checks, 4);
  assert.equal(await allowed('mallory', 'alice-secret'), false);
  assert.equal(checks, 5);
  // Past the keep time (5 minutes) the match is checked again.
  clock += 300_000;
  assert.equal(await allowed('alice', 'alice-secret'), true);
  assert.equal(checks, 6);
});

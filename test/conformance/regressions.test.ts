// What makes a conformance run worse than the committed report: the comparison `npm run conformance` fails on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { regressions } from '../../conformance/report.js';

const stats = (Passed: number, Failed = 0) => ({ Passed, Failed, Skipped: 0 });
const committed = {
  name: 'GATEWAY-HTTP',
  core: { result: 'success', statistics: stats(36) },
  extended: {
    result: 'success',
    statistics: stats(23),
    supportedFeatures: ['HTTPRouteMethodMatching', 'GatewayPort8080'],
  },
};

test('the same result, or more, is no regression', () => {
  assert.deepEqual(regressions(committed, committed), []);
  const more = {
    ...committed,
    extended: {
      ...committed.extended,
      statistics: stats(24),
      supportedFeatures: [...committed.extended.supportedFeatures, 'HTTPRouteCORS'],
    },
  };
  assert.deepEqual(regressions(committed, more), []);
});

test('a failed profile, fewer core passes, or a dropped feature claim are regressions', () => {
  const failed = { ...committed, core: { result: 'failure', statistics: stats(35, 1) } };
  assert.deepEqual(regressions(committed, failed), ['core: failure', 'core passed 35 < 36 committed']);
  const dropped = {
    ...committed,
    extended: { ...committed.extended, supportedFeatures: ['GatewayPort8080'] },
  };
  assert.deepEqual(regressions(committed, dropped), [
    'extended feature HTTPRouteMethodMatching is no longer claimed',
  ]);
  const extendedFailed = {
    ...committed,
    extended: { ...committed.extended, result: 'failure', failedTests: ['HTTPRouteMethodMatching'] },
  };
  assert.deepEqual(regressions(committed, extendedFailed), ['extended: failure (HTTPRouteMethodMatching)']);
});

// What makes a conformance run worse than the committed report: the comparison `npm run conformance` fails on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { profilesClaimed, regressions, reportRegressions } from '../../conformance/report.js';

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

test('the profiles run follow the route kinds claimed', () => {
  assert.deepEqual(profilesClaimed(['Gateway', 'HTTPRoute']), ['GATEWAY-HTTP']);
  assert.deepEqual(profilesClaimed(['GRPCRoute', 'Gateway', 'HTTPRoute']), ['GATEWAY-HTTP', 'GATEWAY-GRPC']);
  assert.deepEqual(profilesClaimed(['Gateway']), []);
  assert.deepEqual(profilesClaimed(['Gateway', 'TCPRoute', 'TLSRoute', 'UDPRoute']), [
    'GATEWAY-TLS',
    'GATEWAY-TCP',
    'GATEWAY-UDP',
  ]);
});

test('a report may gain a profile that passes, never drop or fail one', () => {
  const grpc = { name: 'GATEWAY-GRPC', core: { result: 'success', statistics: stats(15) } };
  assert.deepEqual(reportRegressions([committed], [committed, grpc]), []);
  assert.deepEqual(reportRegressions([committed, grpc], [committed]), ['GATEWAY-GRPC: no longer run']);
  const grpcFailed = { ...grpc, core: { result: 'failure', statistics: stats(14, 1) } };
  assert.deepEqual(reportRegressions([committed], [committed, grpcFailed]), ['GATEWAY-GRPC core: failure']);
  assert.deepEqual(reportRegressions([committed, grpc], [committed, grpcFailed]), [
    'GATEWAY-GRPC core: failure',
    'GATEWAY-GRPC core passed 14 < 15 committed',
  ]);
});

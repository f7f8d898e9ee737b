import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RE2JS } from 're2js';
import type { GRPCMethodMatch } from '../../src/api/grpc-route.js';
import { grpcMatchRank, grpcMethodPath, re2Literal } from '../../src/translate/grpc-method-path.js';

const exact = (service?: string, method?: string): GRPCMethodMatch => ({ type: 'Exact', service, method });
const regex = (service?: string, method?: string): GRPCMethodMatch => ({
  type: 'RegularExpression',
  service,
  method,
});

/** Whether the fleet-config regex matches the whole path, as the proxy matches it. */
function matchesWhole(pattern: string, path: string): boolean {
  return RE2JS.compile(pattern).matches(path);
}

test('Exact service and method is an Exact path /<service>/<method>', () => {
  assert.deepEqual(grpcMethodPath(exact('echo.v1.Echo', 'Say')), {
    type: 'Exact',
    value: '/echo.v1.Echo/Say',
  });
});

test('an Exact service alone is a path prefix: every method of the service, by whole segment', () => {
  assert.deepEqual(grpcMethodPath(exact('echo.Echo')), { type: 'PathPrefix', value: '/echo.Echo' });
});

test('an Exact method alone is a pattern over any service, its dots and other literals escaped', () => {
  const path = grpcMethodPath(exact(undefined, 'Say'));
  assert.deepEqual(path, { type: 'RegularExpression', value: '/[^/]+/Say' });
  assert.ok(matchesWhole(path!.value, '/a.B/Say'));
  assert.ok(!matchesWhole(path!.value, '/a.B/SayMore'));
  assert.ok(!matchesWhole(path!.value, '/Say'));
  assert.equal(re2Literal('a.b*c(d)[e]{f}|g^$\\+?'), 'a\\.b\\*c\\(d\\)\\[e\\]\\{f\\}\\|g\\^\\$\\\\\\+\\?');
});

test('RegularExpression: each pattern must match its whole segment; a missing one is any segment', () => {
  const both = grpcMethodPath(regex('echo\\.v[0-9]+\\.Echo', 'Say|Get'))!;
  assert.equal(both.value, '/(?:echo\\.v[0-9]+\\.Echo)/(?:Say|Get)');
  assert.ok(matchesWhole(both.value, '/echo.v2.Echo/Get'));
  assert.ok(!matchesWhole(both.value, '/echo.v2.Echo/GetAll'), 'alternation stays inside its group');
  assert.ok(!matchesWhole(both.value, '/x.echo.v2.Echo/Get'));
  const service = grpcMethodPath(regex('admin\\..*'))!;
  assert.equal(service.value, '/(?:admin\\..*)/[^/]+');
  assert.ok(matchesWhole(service.value, '/admin.Users/List'));
  const method = grpcMethodPath(regex(undefined, 'List.*'))!;
  assert.ok(matchesWhole(method.value, '/any.Service/ListAll'));
  assert.ok(!matchesWhole(method.value, '/any.Service/GetList'));
});

test('no method match, or an empty service and method, matches every path', () => {
  assert.equal(grpcMethodPath(undefined), undefined);
  assert.equal(grpcMethodPath(exact('', '')), undefined);
  assert.deepEqual(grpcMethodPath(exact('', 'Say')), { type: 'RegularExpression', value: '/[^/]+/Say' });
});

test('ranks: Exact before RegularExpression before any method, with the characters named', () => {
  assert.deepEqual(grpcMatchRank(exact('echo.Echo', 'Say')), { tier: 0, service: 9, method: 3 });
  assert.deepEqual(grpcMatchRank(regex('e.*')), { tier: 1, service: 3, method: 0 });
  assert.deepEqual(grpcMatchRank(undefined), { tier: 2, service: 0, method: 0 });
  assert.deepEqual(grpcMatchRank(exact('', '')), { tier: 2, service: 0, method: 0 });
});

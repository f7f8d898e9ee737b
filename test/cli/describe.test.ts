// `portico describe` on a fixed controller state (test/provider/standalone/fixture-state.ts) through a real
// admin server: golden pages for each kind (regenerate with UPDATE_GOLDEN=1 and review the diff), a route
// attached nowhere saying why, and the usage and not-found errors.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runDescribe } from '../../src/cli/describe.js';
import { isPorticoError } from '../../src/platform/errors.js';
import { startAdminServer } from '../../src/provider/standalone/admin-server.js';
import { FIXTURE_NOW, fixtureState } from '../provider/standalone/fixture-state.js';
import { REPO_ROOT } from '../support/portico.js';

const TESTDATA = join(REPO_ROOT, 'test/cli/testdata');

async function controller(t: { after: (fn: () => Promise<void>) => void }) {
  const server = await startAdminServer({ address: '127.0.0.1:0', getState: () => fixtureState() });
  t.after(() => server.close());
  return async (...argv: string[]) => {
    let stdout = '';
    const code = await runDescribe([...argv, '--admin-address', server.address], {
      stdout: (s) => {
        stdout += s;
      },
      now: () => FIXTURE_NOW,
    });
    return { code, stdout };
  };
}

function golden(name: string, actual: string): void {
  const file = join(TESTDATA, `describe-${name}.txt`);
  if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, actual);
  assert.equal(actual, readFileSync(file, 'utf8'), `${file} (UPDATE_GOLDEN=1 regenerates it)`);
}

for (const [name, argv] of [
  ['gateway', ['gateway', 'eg']],
  ['gatewayclass', ['gc', 'eg']],
  ['httproute', ['httproute', 'backend']],
  ['httproute-attached-nowhere', ['httproutes', 'catch-all']],
  ['grpcroute', ['grpcroute', 'echo']],
] as const) {
  test(`describe ${argv.join(' ')} prints the golden page`, async (t) => {
    const describe = await controller(t);
    const { code, stdout } = await describe(...argv);
    assert.equal(code, 0);
    golden(name, stdout);
  });
}

test('a Gateway shows every condition, its routes and its fleet with the proxies it has', async (t) => {
  const describe = await controller(t);
  const { stdout } = await describe('gtw', 'eg');
  assert.match(stdout, /^Conditions:\n {2}TYPE {9}STATUS/m);
  assert.match(stdout, /^ {2}HTTPRoute +default +backend +\* +True +False$/m);
  assert.match(stdout, /^ {2}HTTPRoute +default +catch-all +\* +<none> +<none>$/m);
  assert.match(stdout, /^Fleet: {2}default\/eg\n {2}Address: +127\.0\.1\.1/m);
  assert.match(stdout, /proxy-default-eg-e41e7b31 {3}3/);
  assert.match(stdout, /Process: +pid 4242, running, 0 restarts/);
});

test('a route attached nowhere says so, and why for each parent', async (t) => {
  const describe = await controller(t);
  const { stdout } = await describe('httproute', 'backend');
  assert.match(stdout, /^Status: +attached to 1 of 2 parents$/m);
  assert.match(
    stdout,
    /Gateway infra\/shared listener https: no status: Gateway infra\/shared does not exist/,
  );
  assert.match(stdout, /^Problems:\n {2}parent Gateway default\/eg: ResolvedRefs=False \(Pending\)/m);
  const nowhere = await describe('httproute', 'catch-all');
  assert.match(nowhere.stdout, /^Status: +attached to no Gateway: no Gateway of this controller reports it/m);
});

test('describe without a name, with an unknown kind or an unknown option is a usage error', async (t) => {
  const describe = await controller(t);
  for (const [argv, message] of [
    [['gateway'], /describe: a Gateway name is required/],
    [
      ['widgets', 'x'],
      /describe: unknown kind 'widgets' \(one of gatewayclass, gateway, listenerset, httproute, grpcroute, tlsroute, tcproute, udproute, accesspolicy, clienttrafficpolicy, ratelimitpolicy\)/,
    ],
    [['gateway', 'eg', '--colour'], /describe: unknown option --colour/],
  ] as const) {
    await assert.rejects(describe(...argv), (error: unknown) => {
      assert.ok(isPorticoError(error));
      assert.equal(error.code, 'E_USAGE');
      assert.match(error.message, message);
      return true;
    });
  }
});

test('an object that does not exist is named with where it was looked for', async (t) => {
  const describe = await controller(t);
  await assert.rejects(
    describe('gateway', 'nope', '-n', 'team-a'),
    /gateways "nope" not found in namespace team-a \(the standalone controller at 127\.0\.0\.1:\d+\)/,
  );
});

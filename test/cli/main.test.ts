import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { PORTICO_MAIN } from '../support/portico.js';

test('an unknown subcommand exits 2 and lists the commands', () => {
  const result = spawnSync(process.execPath, [PORTICO_MAIN, 'no-such-command'], { encoding: 'utf8' });
  assert.equal(result.status, 2);
  assert.match(result.stderr, /unknown command 'no-such-command'/);
  assert.match(result.stderr, /usage: portico <command>/);
});

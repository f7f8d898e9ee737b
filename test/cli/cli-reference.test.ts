// docs/cli-reference.md is every command's --help as the program prints it today.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import { CLI_REFERENCE, renderCliReference } from '../../scripts/cli-reference.js';
import { COMMANDS } from '../../src/cli/commands.js';

test('docs/cli-reference.md is what scripts/cli-reference.ts writes from the commands', async () => {
  assert.equal(
    readFileSync(CLI_REFERENCE, 'utf8'),
    await renderCliReference(),
    'run node --import tsx scripts/cli-reference.ts',
  );
});

test('every command has its section, with its usage line', async () => {
  const page = await renderCliReference();
  for (const name of Object.keys(COMMANDS)) {
    assert.match(page, new RegExp(`^## portico ${name}$`, 'm'));
    const { HELP } = await COMMANDS[name]!.load();
    assert.ok(page.includes(HELP.trimEnd().replaceAll(`${tmpdir()}/`, '$TMPDIR/')), name);
  }
});

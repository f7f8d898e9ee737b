// `portico completion bash|zsh`, loaded by the real shells: commands, each command's options (taken from its
// usage text), kinds, and object names asked of a running admin API through `portico get -o name`.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { optionsOf } from '../../src/cli/completion.js';
import { startAdminServer } from '../../src/provider/standalone/admin-server.js';
import { fixtureState } from '../provider/standalone/fixture-state.js';
import { PORTICO_MAIN } from '../support/portico.js';

const hasZsh = spawnSync('zsh', ['--version']).status === 0;

/**
 * The completions the shell offers for `words`, the last being the one under the cursor. Run without blocking:
 * the admin server the shell asks for names runs in this process.
 */
async function complete(shell: 'bash' | 'zsh', words: string[]): Promise<string[]> {
  const quoted = words.map((w) => `'${w}'`).join(' ');
  // zsh runs bash completion functions under `emulate sh` (0-based arrays), as its bashcompinit does.
  const emulate = shell === 'zsh' ? 'emulate -L sh; setopt kshglob noshglob braceexpand;' : '';
  const script = `portico() { '${process.execPath}' '${PORTICO_MAIN}' "$@"; }
source <('${process.execPath}' '${PORTICO_MAIN}' completion ${shell})
t() { ${emulate} COMP_WORDS=(${quoted}); COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 )); _portico_complete; printf '%s\\n' "\${COMPREPLY[@]}"; }
t`;
  const child = spawn(shell, ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  const result = { stdout: '', stderr: '', status: null as number | null };
  child.stdout.on('data', (b: Buffer) => {
    result.stdout += b.toString('utf8');
  });
  child.stderr.on('data', (b: Buffer) => {
    result.stderr += b.toString('utf8');
  });
  result.status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.stderr, '');
  return result.stdout.split('\n').filter((l) => l !== '');
}

test('the options of a usage text are its --long names, once each', () => {
  assert.deepEqual(optionsOf('  -n, --namespace NS  x (default: --namespace)\n  --all-namespaces\n  a--b'), [
    '--namespace',
    '--all-namespaces',
  ]);
});

test('bash completes commands, options, kinds, formats and object names', async (t) => {
  const server = await startAdminServer({ address: '127.0.0.1:0', getState: () => fixtureState() });
  t.after(() => server.close());
  assert.deepEqual(await complete('bash', ['portico', 'de']), ['describe']);
  assert.deepEqual(await complete('bash', ['portico', 'get', '--w']), ['--watch']);
  assert.deepEqual(await complete('bash', ['portico', 'standalone', '--log-l']), ['--log-level']);
  assert.deepEqual(await complete('bash', ['portico', 'get', '-o', 'y']), ['yaml']);
  assert.deepEqual(await complete('bash', ['portico', 'describe', 'gatewayc']), [
    'gatewayclasses',
    'gatewayclass',
  ]);
  assert.deepEqual(await complete('bash', ['portico', 'completion', '']), ['bash', 'zsh']);
  // Names come from the controller the line names, wherever its option stands.
  assert.deepEqual(
    await complete('bash', ['portico', 'get', 'httproutes', '--admin-address', server.address, 'c']),
    ['catch-all'],
  );
  assert.deepEqual(
    await complete('bash', [
      'portico',
      'describe',
      'gtw',
      '-n',
      'team-a',
      '--admin-address',
      server.address,
      '',
    ]),
    ['web'],
  );
});

test('zsh loads the script through bashcompinit and completes names', {
  skip: hasZsh ? false : 'zsh is not installed',
}, async (t) => {
  const server = await startAdminServer({ address: '127.0.0.1:0', getState: () => fixtureState() });
  t.after(() => server.close());
  // zsh's completion system filters by the typed prefix itself; the candidates are what matters here.
  assert.ok((await complete('zsh', ['portico', 'de'])).includes('describe'));
  assert.deepEqual(await complete('zsh', ['portico', 'get', 'gtw', '--admin-address', server.address, '']), [
    'eg',
  ]);
});

test('completion needs bash or zsh: anything else is a usage error, exit 2', () => {
  for (const args of [['completion'], ['completion', 'fish'], ['completion', 'bash', 'extra']]) {
    const result = spawnSync(process.execPath, [PORTICO_MAIN, ...args], { encoding: 'utf8' });
    assert.equal(result.status, 2, args.join(' '));
    assert.match(result.stderr, /usage: portico completion bash\|zsh/);
  }
});

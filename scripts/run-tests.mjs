// Runs every test file with Node's own test runner. Node 20 takes no globs, so the files are listed here.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function collect(dir, out) {
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry === 'testdata') continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) collect(path, out);
    else if (entry.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

const filter = process.argv.slice(2);
const files = collect('test', []).filter((f) => filter.length === 0 || filter.some((p) => f.includes(p)));
files.sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const args = ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=120000', ...files];
const result = spawnSync(process.execPath, args, {
  stdio: 'inherit',
  env: { ...process.env, PORTICO_TEST: '1' },
});
process.exit(result.status ?? 1);

// Runs every test file with Node's own test runner. Node 20 takes no globs, so the files are listed here.
// Two phases: everything else (two files at a time), then the Kubernetes end-to-end files one at a time, each
// starting a simulator with several Node pods, so they don't compete with other heavy files for the 2 cores.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';

const KUBERNETES_E2E = join('test', 'e2e', 'kubernetes') + sep;

function collect(dir, out) {
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry === 'testdata') continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) collect(path, out);
    else if (entry.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

function run(files, concurrency, env) {
  if (files.length === 0) return 0;
  const args = [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-timeout=120000',
    ...files,
  ];
  const result = spawnSync(process.execPath, args, {
    stdio: 'inherit',
    env: { ...process.env, PORTICO_TEST: '1', ...env },
  });
  return result.status ?? 1;
}

const filter = process.argv.slice(2);
const files = collect('test', []).filter((f) => filter.length === 0 || filter.some((p) => f.includes(p)));
files.sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const first = run(
  files.filter((f) => !f.startsWith(KUBERNETES_E2E)),
  2,
  {},
);
const second = run(
  files.filter((f) => f.startsWith(KUBERNETES_E2E)),
  1,
  { PORTICO_E2E_KUBERNETES: '1' },
);
process.exit(first !== 0 ? first : second);

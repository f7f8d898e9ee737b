// Runs every test file with Node's own test runner. Node 20 takes no globs, so the files are listed here.
// Two sequences side by side, each keeping heavy files from competing with each other:
//   - without a cluster: everything else, two files at a time; then the data plane's files again on the Node
//     the image ships, when that is not the Node running this. Its output is kept and printed when it ends,
//     so the two sequences' logs do not interleave;
//   - with clusters: the cluster's own files (test/cluster), each starting and stopping a real cluster of its
//     own; then the Kubernetes end-to-end files, one at a time, on one real cluster started here for all of
//     them (PORTICO_TEST_CLUSTER names it), then — in a full run — the upstream conformance suite in both
//     deployment modes on the same cluster (`npm run conformance`), which fails on any regression from the
//     committed reports; the cluster is stopped at the end.
// The cluster sequence mostly waits on pods and the API server, so the first one's CPU time fits beside it.
// `node scripts/run-tests.mjs [substring...]` runs the matching files only (and no conformance run).
// `--full` (what `npm test` runs) first lints, type-checks, builds and builds the toolchain, stopping at the
// first failure. Every run ends with the time each step took, so a slow phase shows where it is.
import { spawn, spawnSync } from 'node:child_process';
import {
  createWriteStream,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, sep } from 'node:path';

const CLUSTER_FILES = join('test', 'cluster') + sep;
const KUBERNETES_E2E = join('test', 'e2e', 'kubernetes') + sep;
const CLUSTER_START_TIMEOUT_MS = 300_000;

function collect(dir, out) {
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry === 'testdata') continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) collect(path, out);
    else if (entry.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

/** The failing tests of every run so far (TAP `not ok` lines, indented by depth), printed at the end. */
const failures = [];

/** Collects the `not ok` lines of a TAP file into `failures` under `title`, then removes the file. */
function collectFailures(tapPath, title) {
  const tap = existsSync(tapPath) ? readFileSync(tapPath, 'utf8').split('\n') : [];
  const lines = [];
  // Each failure with the location and error of its diagnostics block (which ends with `...`).
  for (let i = 0; i < tap.length; i++) {
    if (!/^\s*not ok /.test(tap[i])) continue;
    lines.push(tap[i]);
    for (let j = i + 1; j < tap.length && !/^\s*\.\.\.$/.test(tap[j]); j++) {
      if (!/^\s*(location|error):/.test(tap[j])) continue;
      // A multi-line error (`error: |-`) says what it is on its next line.
      const text = /:\s*\|-$/.test(tap[j]) ? `${tap[j]} ${(tap[j + 1] ?? '').trim()}` : tap[j];
      lines.push(`  ${text.slice(0, 300)}`);
    }
  }
  rmSync(dirname(tapPath), { recursive: true, force: true });
  if (lines.length > 0) failures.push({ title, lines });
}

/** Runs `files`; resolves with the exit status. `out`: where the output goes (a stream), else inherited. */
function run(files, concurrency, env, node = { path: process.execPath, version: process.version }, out) {
  if (files.length === 0) return Promise.resolve(0);
  const say = (line) => (out === undefined ? console.log(line) : out.write(`${line}\n`));
  const title = `${files.length} test file${files.length === 1 ? '' : 's'} on Node ${node.version}`;
  say(`# ${title} (${node.path})`);
  // A second reporter writes TAP to a file, so the failures can be listed again at the end of a long log.
  const tapPath = join(mkdtempSync(join(tmpdir(), 'portico-test-tap-')), 'run.tap');
  const shown = out === undefined && process.stdout.isTTY ? 'spec' : 'tap';
  const args = [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-timeout=600000',
    `--test-reporter=${shown}`,
    '--test-reporter-destination=stdout',
    '--test-reporter=tap',
    `--test-reporter-destination=${tapPath}`,
    ...files,
  ];
  const child = spawn(node.path, args, {
    stdio: out === undefined ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PORTICO_TEST: '1', ...env },
  });
  if (out !== undefined) {
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
  }
  return new Promise((resolve) =>
    child.on('close', (code) => {
      collectFailures(tapPath, title);
      resolve(code ?? 1);
    }),
  );
}

// The proxy's own files and its discovery client: their sockets, HTTP parsing and TLS are the runtime's.
const IMAGE_NODE_FILES = [join('test', 'proxy') + sep, join('test', 'discovery', 'client.test.ts')];

function dataPlaneFiles(files) {
  return files.filter((f) => IMAGE_NODE_FILES.some((p) => f.startsWith(p)));
}

/** Runs the data plane's files on the image's Node (toolchain/artifacts.ts), fetched once into the cache. */
function runOnImageNode(dataPlane, out) {
  const fetched = spawnSync(process.execPath, ['--import', 'tsx', 'toolchain/node-runtime.ts'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (fetched.status !== 0) {
    console.error("# the image's Node is not available, so the data plane is untested on it");
    return Promise.resolve(1);
  }
  const path = fetched.stdout.trim();
  const version = spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (version === process.version) return Promise.resolve(0);
  // A test that starts `node` by name gets this Node too.
  const env = { PATH: `${dirname(path)}${delimiter}${process.env.PATH}` };
  return run(dataPlane, 2, env, { path, version }, out);
}

/** Starts `npm run cluster` in the background; resolves with its directory once it is ready. */
async function startSharedCluster() {
  const scratch = mkdtempSync(join(tmpdir(), 'portico-test-run-'));
  const readyFile = join(scratch, 'ready');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/cluster/main.ts', '--ready-file', readyFile],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const started = Date.now();
  for (;;) {
    if (existsSync(readyFile)) break;
    if (child.exitCode !== null)
      throw new Error(`the test cluster exited (${child.exitCode}) before it was ready`);
    if (Date.now() - started > CLUSTER_START_TIMEOUT_MS) {
      child.kill('SIGTERM');
      throw new Error('the test cluster was not ready within 5 minutes');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const dir = readFileSync(readyFile, 'utf8');
  rmSync(scratch, { recursive: true, force: true });
  console.log(`test cluster ready in ${((Date.now() - started) / 1000).toFixed(1)} s (${dir})`);
  const stop = () =>
    new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGTERM');
    });
  return { dir, stop };
}

/** Each step's name, seconds and exit status, printed at the end. */
const steps = [];

function timed(name, work) {
  const started = Date.now();
  const status = work();
  steps.push({ name, seconds: (Date.now() - started) / 1000, status });
  return status;
}

/** `work` resolves with an exit status (a value that is not a number counts as 0). */
async function timedAsync(name, work) {
  const started = Date.now();
  let status = 1;
  try {
    const value = await work();
    status = typeof value === 'number' ? value : 0;
    return value;
  } finally {
    steps.push({ name, seconds: (Date.now() - started) / 1000, status });
  }
}

const runStarted = Date.now();

function printTimes() {
  const width = Math.max(...steps.map((s) => s.name.length), 5);
  const line = (name, seconds, note) =>
    `  ${name.padEnd(width)}  ${seconds.toFixed(0).padStart(5)} s  ${note}`;
  console.log('\nstep times (the two test sequences run side by side):');
  for (const s of steps)
    console.log(line(s.name, s.seconds, s.status === 0 ? 'ok' : `FAILED (exit ${s.status})`));
  console.log(line('wall clock', (Date.now() - runStarted) / 1000, ''));
  for (const f of failures) {
    console.log(`\nfailing tests of the run of ${f.title}:`);
    for (const l of f.lines.slice(0, 120)) console.log(`  ${l}`);
    if (f.lines.length > 120) console.log(`  … and ${f.lines.length - 120} more lines`);
  }
}

function npmRun(script) {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  return timed(script, () => spawnSync(npm, ['run', '--silent', script], { stdio: 'inherit' }).status ?? 1);
}

const args = process.argv.slice(2);
const full = args.includes('--full');
const filter = args.filter((a) => a !== '--full');
if (full) {
  for (const script of ['lint', 'typecheck', 'build', 'toolchain']) {
    if (npmRun(script) !== 0) {
      printTimes();
      process.exit(1);
    }
  }
}
const files = collect('test', []).filter((f) => filter.length === 0 || filter.some((p) => f.includes(p)));
files.sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const plain = files.filter((f) => !f.startsWith(CLUSTER_FILES) && !f.startsWith(KUBERNETES_E2E));
const clusterFiles = files.filter((f) => f.startsWith(CLUSTER_FILES));
const e2e = files.filter((f) => f.startsWith(KUBERNETES_E2E));

function conformance(clusterDir) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'conformance/run.ts'], {
    stdio: 'inherit',
    env: { ...process.env, PORTICO_TEST_CLUSTER: clusterDir },
  });
  return new Promise((resolve) => child.on('close', (code) => resolve(code ?? 1)));
}

/** Unit, golden and standalone files, then the data plane's on the image's Node; `out` as for run(). */
async function withoutCluster(out) {
  const results = [];
  if (plain.length > 0)
    results.push(
      await timedAsync(`unit, golden and standalone tests (${plain.length} files)`, () =>
        run(plain, 2, {}, undefined, out),
      ),
    );
  const dataPlane = dataPlaneFiles(plain);
  if (dataPlane.length > 0)
    results.push(
      await timedAsync(`the data plane on the image's Node (${dataPlane.length} files)`, () =>
        runOnImageNode(dataPlane, out),
      ),
    );
  return results;
}

/** The cluster's own files, then the shared cluster: Kubernetes e2e files and, in a full run, conformance. */
async function withClusters() {
  const results = [];
  if (clusterFiles.length > 0)
    results.push(
      await timedAsync(`the cluster's own tests (${clusterFiles.length} files)`, () =>
        run(clusterFiles, 1, {}),
      ),
    );
  if (e2e.length === 0 && !withConformance) return results;
  const cluster = await timedAsync('shared cluster start', startSharedCluster);
  try {
    const env = { PORTICO_E2E_KUBERNETES: '1', PORTICO_TEST_CLUSTER: cluster.dir };
    results.push(await timedAsync(`Kubernetes e2e (${e2e.length} files)`, () => run(e2e, 1, env)));
    if (withConformance)
      results.push(await timedAsync('conformance, both modes', () => conformance(cluster.dir)));
  } finally {
    await timedAsync('shared cluster stop', cluster.stop);
  }
  return results;
}

/** Runs the sequence without a cluster beside `clusters`, its output kept in a file and printed at its end. */
async function besideClusters() {
  const scratch = mkdtempSync(join(tmpdir(), 'portico-test-log-'));
  const path = join(scratch, 'without-cluster.log');
  const out = createWriteStream(path);
  console.log(`# unit and data-plane tests run beside the cluster tests; their output follows when they end`);
  const results = await withoutCluster(out);
  await new Promise((resolve) => out.end(resolve));
  console.log(`\n# output of the tests without a cluster (${path}):`);
  process.stdout.write(readFileSync(path));
  rmSync(scratch, { recursive: true, force: true });
  return results;
}

const withConformance = filter.length === 0;
const needsCluster = clusterFiles.length > 0 || e2e.length > 0 || withConformance;
const results = needsCluster
  ? (
      await Promise.all([
        besideClusters(),
        // A cluster that fails to start fails the run, after the other sequence's output is printed.
        withClusters().catch((error) => {
          console.error(`# the cluster tests stopped: ${error instanceof Error ? error.message : error}`);
          return [1];
        }),
      ])
    ).flat()
  : await withoutCluster(undefined);
printTimes();
process.exit(results.find((r) => r !== 0) ?? 0);

// Runs every test file with Node's own test runner. Node 20 takes no globs, so the files are listed here.
// Three phases, so heavy files never compete for the 2 cores:
//   1. everything else, two files at a time; then the data plane's files again on the Node the image ships,
//      when that is not the Node running this;
//   2. the cluster's own files (test/cluster), each starting and stopping a real cluster of its own;
//   3. the Kubernetes end-to-end files, one at a time, on one real cluster started here for all of them
//      (PORTICO_TEST_CLUSTER names it), then — in a full run — the upstream conformance suite in both
//      deployment modes on the same cluster (`npm run conformance`), which fails on any regression from the
//      committed reports; the cluster is stopped at the end.
// `node scripts/run-tests.mjs [substring...]` runs the matching files only (and no conformance run).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
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

function run(files, concurrency, env, node = { path: process.execPath, version: process.version }) {
  if (files.length === 0) return 0;
  console.log(
    `# ${files.length} test file${files.length === 1 ? '' : 's'} on Node ${node.version} (${node.path})`,
  );
  const args = [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-timeout=600000',
    ...files,
  ];
  const result = spawnSync(node.path, args, {
    stdio: 'inherit',
    env: { ...process.env, PORTICO_TEST: '1', ...env },
  });
  return result.status ?? 1;
}

// The proxy's own files and its discovery client: their sockets, HTTP parsing and TLS are the runtime's.
const IMAGE_NODE_FILES = [join('test', 'proxy') + sep, join('test', 'discovery', 'client.test.ts')];

/** Runs the data plane's files on the image's Node (toolchain/artifacts.ts), fetched once into the cache. */
function runOnImageNode(files) {
  const dataPlane = files.filter((f) => IMAGE_NODE_FILES.some((p) => f.startsWith(p)));
  if (dataPlane.length === 0) return 0;
  const fetched = spawnSync(process.execPath, ['--import', 'tsx', 'toolchain/node-runtime.ts'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (fetched.status !== 0) {
    console.error("# the image's Node is not available, so the data plane is untested on it");
    return 1;
  }
  const path = fetched.stdout.trim();
  const version = spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (version === process.version) return 0;
  // A test that starts `node` by name gets this Node too.
  return run(dataPlane, 2, { PATH: `${dirname(path)}${delimiter}${process.env.PATH}` }, { path, version });
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

const filter = process.argv.slice(2);
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
  const started = Date.now();
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'conformance/run.ts'], {
    stdio: 'inherit',
    env: { ...process.env, PORTICO_TEST_CLUSTER: clusterDir },
  });
  console.log(`conformance: ${((Date.now() - started) / 1000).toFixed(0)} s, exit ${result.status}`);
  return result.status ?? 1;
}

const results = [run(plain, 2, {}), runOnImageNode(plain), run(clusterFiles, 1, {})];
const withConformance = filter.length === 0;
if (e2e.length > 0 || withConformance) {
  const cluster = await startSharedCluster();
  try {
    results.push(run(e2e, 1, { PORTICO_E2E_KUBERNETES: '1', PORTICO_TEST_CLUSTER: cluster.dir }));
    if (withConformance) results.push(conformance(cluster.dir));
  } finally {
    await cluster.stop();
  }
}
process.exit(results.find((r) => r !== 0) ?? 0);

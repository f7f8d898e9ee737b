// `npm run toolchain`: builds what the Kubernetes tests run — the cluster's binaries from the pinned Go
// modules, the pause program, and the container images — into a cache outside git, rebuilding only what
// changed. It ends by writing the manifest the cluster harness reads (toolchain/manifest.ts).
//
//   npm run toolchain [-- --only NAME[,NAME]] [--force]
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BINARY_IMAGES, GO_BUILDS, HOST_PACKAGES, PAUSE_VERSION } from './artifacts.js';
import { cacheDir, type Manifest, manifestPath, REPO } from './manifest.js';
import { buildOpenIdProviderImage } from './openid-provider-image.js';
import { buildPorticoImage, builtDist, fileHash, hash } from './portico-image.js';
import { buildRedisImage } from './redis-image.js';

const GO_MINIMUM = [1, 26];
/** Bumped when a recipe changes in a way the inputs below do not show. */
const RECIPE_VERSION = '1';

class ToolchainError extends Error {}

function log(message: string): void {
  process.stderr.write(`toolchain: ${message}\n`);
}

interface Finished {
  stdout: string;
  stderr: string;
  status: number | null;
  error?: Error;
}

function logFileOf(name: string): string {
  const logs = join(cacheDir(), 'logs');
  mkdirSync(logs, { recursive: true });
  return join(logs, `${name}.log`);
}

/** Writes a finished command's output to its log; a failure names the log. */
function checked(name: string, command: string, args: string[], result: Finished, started: number) {
  const logFile = logFileOf(name);
  writeFileSync(logFile, `$ ${command} ${args.join(' ')}\n${result.stdout}${result.stderr}`);
  if (result.error !== undefined)
    throw new ToolchainError(`${name}: ${result.error.message} (log: ${logFile})`);
  if (result.status !== 0)
    throw new ToolchainError(`${name} failed (exit ${result.status}); log: ${logFile}`);
  return { seconds: (Date.now() - started) / 1000, stdout: result.stdout };
}

/** Runs a command with its output in a log file; a failure names the log. */
function runLogged(
  name: string,
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv },
) {
  const started = Date.now();
  const result = spawnSync(command, args, {
    cwd: options.cwd ?? REPO,
    env: options.env ?? process.env,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  const { stdout, stderr, status, error } = result;
  return checked(name, command, args, { stdout: stdout ?? '', stderr: stderr ?? '', status, error }, started);
}

/** Builds still running: a failed one stops the others rather than leaving them behind. */
const running = new Set<ReturnType<typeof spawn>>();

/** runLogged without blocking, so builds run side by side. */
function runLoggedInBackground(
  name: string,
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ seconds: number; stdout: string }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let spawnError: Error | undefined;
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (error) => {
      spawnError = error;
    });
    child.on('close', (status) => {
      running.delete(child);
      const result: Finished = {
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        status,
        error: spawnError,
      };
      try {
        resolve(checked(name, command, args, result, started));
      } catch (error) {
        reject(error);
      }
    });
  });
}

function checkGo(): string {
  // The machine's own Go, whatever GOTOOLCHAIN the shell exports (the README's go1.27.3 is the conformance
  // module's): it builds, and keys the cache of, every module that names no toolchain of its own.
  const found = spawnSync('go', ['env', 'GOVERSION'], {
    encoding: 'utf8',
    env: { ...process.env, GOTOOLCHAIN: 'local' },
  });
  if (found.error !== undefined || found.status !== 0) {
    throw new ToolchainError('Go 1.26 or newer is needed on PATH to build the Kubernetes test toolchain');
  }
  const version = found.stdout.trim();
  const [major = 0, minor = 0] = version
    .replace(/^go/, '')
    .split('.')
    .map((n) => Number.parseInt(n, 10));
  if (major < (GO_MINIMUM[0] ?? 1) || (major === GO_MINIMUM[0] && minor < (GO_MINIMUM[1] ?? 0))) {
    throw new ToolchainError(`Go 1.26 or newer is needed (found ${version})`);
  }
  return version;
}

function installHostPackages(): void {
  const missing = HOST_PACKAGES.filter(
    (p) =>
      spawnSync('dpkg-query', ['-W', `-f=\${Status}`, p], { encoding: 'utf8' }).stdout !==
      'install ok installed',
  );
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0) {
    throw new ToolchainError(`root is needed to install the Debian packages ${missing.join(', ')}`);
  }
  log(`installing Debian packages: ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  runLogged('apt-update', 'apt-get', ['update', '-qq'], { env });
  runLogged('apt-install', 'apt-get', ['install', '-y', '-qq', ...missing], { env });
}

/** Every file under `dir`, as paths relative to it, sorted. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true })
    .flatMap((e) => {
      const path = prefix === '' ? e.name : `${prefix}/${e.name}`;
      return e.isDirectory() ? filesUnder(dir, path) : [path];
    })
    .sort();
}

function goModuleKey(build: (typeof GO_BUILDS)[string], goVersion: string): string {
  const dir = join(REPO, build.module);
  const sources = readdirSync(dir)
    .filter((f) => f.endsWith('.go') || f === 'go.mod' || f === 'go.sum')
    .sort()
    .map((f) => `${f}:${fileHash(join(dir, f))}`);
  const vendored = (build.vendored ?? []).flatMap((v) =>
    filesUnder(join(dir, v)).map((f) => `${v}/${f}:${fileHash(join(dir, v, f))}`),
  );
  // A build on a fetched toolchain is keyed by that toolchain, not by the machine's Go.
  return hash(RECIPE_VERSION, build.toolchain ?? goVersion, JSON.stringify(build), ...sources, ...vendored);
}

/** GOTOOLCHAIN for a module's go commands: the one its builds name, else the machine's own Go. */
function toolchainOf(module: string): string {
  return Object.values(GO_BUILDS).find((b) => b.module === module)?.toolchain ?? 'local';
}

/** Builds a GO_BUILDS entry into <cache>/<name>/<key>/ unless it is there. */
async function goBuild(name: string, goVersion: string): Promise<Record<string, string>> {
  const build = GO_BUILDS[name];
  if (build === undefined) throw new ToolchainError(`unknown Go build ${name}`);
  const key = goModuleKey(build, goVersion);
  const out = join(cacheDir(), name, key);
  const paths = Object.fromEntries(build.names.map((n) => [n, join(out, n)]));
  if (Object.values(paths).every((p) => existsSync(p))) return paths;
  log(`building ${name} (${build.names.join(', ')})`);
  const tmp = `${out}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const env = {
    ...process.env,
    GOTOOLCHAIN: build.toolchain ?? 'local',
    CGO_ENABLED: build.cgo === true ? '1' : '0',
    GOFLAGS: '-mod=readonly -buildvcs=false',
  };
  // One go command for several mains shares the compile work; each binary is then named by its package.
  const target = build.packages.length > 1 ? `${tmp}/` : join(tmp, build.names[0] ?? name);
  const args =
    build.test === true ? ['test', '-c', '-trimpath', '-o', target] : ['build', '-trimpath', '-o', target];
  if (build.tags !== undefined) args.push('-tags', build.tags);
  if (build.ldflags !== undefined) args.push('-ldflags', build.ldflags);
  args.push(...build.packages);
  const { seconds } = await runLoggedInBackground(name, 'go', args, { cwd: join(REPO, build.module), env });
  rmSync(out, { recursive: true, force: true });
  renameSync(tmp, out);
  log(`built ${name} in ${seconds.toFixed(0)} s`);
  return paths;
}

/** Where a dependency of one of our modules is unpacked (downloading it when needed). */
function moduleDir(module: string, path: string): string {
  const out = execFileSync('go', ['mod', 'download', '-json', path], {
    cwd: join(REPO, module),
    encoding: 'utf8',
    env: { ...process.env, GOTOOLCHAIN: toolchainOf(module), GOFLAGS: '-mod=readonly' },
  });
  const dir = (JSON.parse(out) as { Dir?: string }).Dir;
  if (dir === undefined) throw new ToolchainError(`go mod download ${path} gave no directory`);
  return dir;
}

/** The pause program, compiled statically from the pinned Kubernetes module's own source. */
function buildPause(): string {
  const source = join(moduleDir('toolchain/kubernetes', 'k8s.io/kubernetes'), 'build/pause/linux/pause.c');
  const key = hash(RECIPE_VERSION, PAUSE_VERSION, readFileSync(source));
  const out = join(cacheDir(), 'pause', key, 'pause');
  if (existsSync(out)) return out;
  mkdirSync(join(cacheDir(), 'pause', key), { recursive: true });
  runLogged(
    'pause',
    'gcc',
    ['-Os', '-Wall', '-static', `-DVERSION=v${PAUSE_VERSION}`, '-o', `${out}.tmp`, source],
    {},
  );
  renameSync(`${out}.tmp`, out);
  return out;
}

/** A layer tarball of a directory, with root ownership and fixed times (GNU tar). */
function layerOf(dir: string, tarFile: string): void {
  runLogged(
    'layer',
    'tar',
    [
      '--sort=name',
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--mtime=@0',
      '--format=posix',
      '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
      '-C',
      dir,
      '-cf',
      tarFile,
      '.',
    ],
    {},
  );
}

function ociImage(tool: string, args: string[]): string {
  return runLogged('oci-image', tool, args, {}).stdout.trim();
}

/** An image of one or more static binaries at the root. */
function binaryImage(
  name: string,
  tool: string,
  binaries: Record<string, string>,
): { archive: string; summary: string } {
  const recipe = BINARY_IMAGES[name];
  if (recipe === undefined) throw new ToolchainError(`unknown image ${name}`);
  const inputs = recipe.binaries.map((b) => {
    const path = binaries[b];
    if (path === undefined) throw new ToolchainError(`image ${name}: no binary ${b}`);
    return path;
  });
  const key = hash(RECIPE_VERSION, JSON.stringify(recipe), fileHash(tool), ...inputs.map(fileHash));
  const dir = join(cacheDir(), 'images', name, key);
  const archive = join(dir, 'image.tar');
  const summaryFile = join(dir, 'summary.txt');
  if (existsSync(archive) && existsSync(summaryFile))
    return { archive, summary: readFileSync(summaryFile, 'utf8') };
  const root = join(dir, 'rootfs');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  recipe.binaries.forEach((b, i) => {
    copyFileSync(inputs[i]!, join(root, b));
    chmodSync(join(root, b), 0o755);
  });
  layerOf(root, join(dir, 'layer.tar'));
  const summary = ociImage(tool, [
    '--out-layout',
    join(dir, 'layout'),
    '--out-archive',
    archive,
    '--layer',
    join(dir, 'layer.tar'),
    '--entrypoint',
    JSON.stringify(recipe.entrypoint),
    '--user',
    recipe.user,
    ...recipe.names.flatMap((n) => ['--name', n]),
  ]);
  rmSync(root, { recursive: true, force: true });
  rmSync(join(dir, 'layer.tar'));
  writeFileSync(summaryFile, summary);
  return { archive, summary };
}

/** The standard-channel CRDs of the Gateway API release the conformance module pins. */
function gatewayApiCrds(): string {
  const dir = moduleDir('conformance', 'sigs.k8s.io/gateway-api');
  const crds = join(dir, 'config/crd/standard');
  if (!existsSync(crds)) throw new ToolchainError(`no standard CRDs in ${dir}`);
  return crds;
}

/**
 * Go builds side by side: each compiles on every core already, but a build also waits on module downloads and
 * links on one core, which another build fills. Each takes up to about 3 GiB, so memory sets the count.
 */
function goBuildJobs(): number {
  return Math.max(1, Math.min(3, Math.floor(totalmem() / (4 * 1024 ** 3))));
}

/** Runs `work` over `items`, at most `limit` at once, results in the order of `items`. */
async function eachAtMost<T, R>(limit: number, items: T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { only: { type: 'string' } },
  });
  const started = Date.now();
  const goVersion = checkGo();
  // Checked now, not after the Go builds it would otherwise fail behind.
  builtDist();
  installHostPackages();
  const only = values.only?.split(',');
  const wanted = (name: string) => only === undefined || only.includes(name);
  const binaries: Record<string, string> = {};
  const builds = Object.keys(GO_BUILDS).filter((name) => wanted(name) || name === 'oci-image');
  const jobs = goBuildJobs();
  const goStarted = Date.now();
  for (const paths of await eachAtMost(jobs, builds, (name) => goBuild(name, goVersion))) {
    Object.assign(binaries, paths);
  }
  log(`Go builds ready in ${((Date.now() - goStarted) / 1000).toFixed(0)} s (${jobs} at a time)`);
  binaries.pause = buildPause();
  const tool = binaries['oci-image'];
  if (tool === undefined) throw new ToolchainError('no oci-image tool');
  const images: Manifest['images'] = {};
  for (const name of Object.keys(BINARY_IMAGES)) {
    if (!BINARY_IMAGES[name]!.binaries.every((b) => binaries[b] !== undefined)) continue;
    const { archive, summary } = binaryImage(name, tool, binaries);
    images[name] = { archive, names: BINARY_IMAGES[name]!.names, summary };
  }
  const portico = await buildPorticoImage();
  images.portico = { archive: portico.archive, names: [portico.name], summary: portico.summary };
  const redis = await buildRedisImage();
  images.redis = { archive: redis.archive, names: [redis.name], summary: redis.summary };
  const openIdProvider = await buildOpenIdProviderImage();
  images['openid-provider'] = {
    archive: openIdProvider.archive,
    names: [openIdProvider.name],
    summary: openIdProvider.summary,
  };
  const manifest: Manifest = { goVersion, binaries, images, files: { gatewayApiCrds: gatewayApiCrds() } };
  mkdirSync(cacheDir(), { recursive: true });
  writeFileSync(`${manifestPath()}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`);
  renameSync(`${manifestPath()}.tmp`, manifestPath());
  for (const [name, image] of Object.entries(images)) log(`image ${name}: ${image.summary}`);
  log(`ready in ${((Date.now() - started) / 1000).toFixed(0)} s; manifest ${manifestPath()}`);
}

try {
  await main();
} catch (error) {
  for (const child of running) child.kill('SIGTERM');
  if (error instanceof ToolchainError) {
    log(error.message);
    process.exit(1);
  }
  throw error;
}

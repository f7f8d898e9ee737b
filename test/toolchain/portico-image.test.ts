// `npm run image`: the image the chart installs, built with no Go and no Docker (toolchain/image.ts). The
// build runs as a user would run it (its own cache folder, so the shared toolchain manifest is left alone),
// then: the OCI layout is checked digest by digest, the unpacked file tree holds what the pods run and
// nothing of the dev tools, the Dockerfile's settings equal the recipe's, and — where the test toolchain is
// built — a containerd of the toolchain's own imports the archive and runs `portico version` in it with runc.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { cacheDir, manifestPath, REPO, readManifest } from '../../toolchain/manifest.js';
import { blobFile, type Descriptor } from '../../toolchain/oci.js';
import { IMAGE_ENTRYPOINT, IMAGE_ENV, IMAGE_USER, IMAGE_WORKDIR } from '../../toolchain/portico-image.js';

const version = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
const work = mkdtempSync(join(tmpdir(), 'portico-image-'));
const rootfs = join(work, 'rootfs');
let archive = '';
let layout = '';
let firstRunOutput = '';

function sha256(bytes: Buffer): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

function runImage(args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'toolchain/image.ts', ...args], {
    cwd: REPO,
    encoding: 'utf8',
    // Its own cache folder, kept between runs: the shared toolchain manifest must not be repointed by a test.
    env: { ...process.env, PORTICO_CACHE_DIR: join(cacheDir(), 'image-test') },
    maxBuffer: 64 * 1024 * 1024,
  });
}

before(() => {
  assert.ok(existsSync(join(REPO, 'dist/cli/main.js')), 'run `npm run build` first');
  const built = runImage(['--rootfs', rootfs]);
  assert.equal(built.status, 0, built.stderr);
  firstRunOutput = built.stdout;
  archive = /^OCI archive: (.+)$/m.exec(built.stdout)?.[1] ?? '';
  assert.ok(existsSync(archive), `no archive named in:\n${built.stdout}`);
  layout = join(archive, '..', 'layout');
});

after(() => {
  rmSync(work, { recursive: true, force: true });
  // The test's cache keeps the runtime layer and node_modules; of the app images only the one built now.
  const images = join(cacheDir(), 'image-test', 'images', 'portico');
  const current = archive === '' ? undefined : join(archive, '..');
  if (!existsSync(images)) return;
  for (const key of readdirSync(images)) {
    const dir = join(images, key);
    if (dir !== current) rmSync(dir, { recursive: true, force: true });
  }
});

test('prints the image, its digest and how to push it', () => {
  assert.match(
    firstRunOutput,
    new RegExp(`ghcr\\.io/portico/portico:${version.replaceAll('.', '\\.')} sha256:[0-9a-f]{64} \\d+ bytes`),
  );
  assert.match(firstRunOutput, /skopeo copy oci-archive:/);
  assert.doesNotMatch(firstRunOutput, /test toolchain now imports/);
});

test('a second run finds the image in its cache', () => {
  const again = runImage([]);
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stdout, /^up to date in /);
  assert.match(again.stdout, new RegExp(`OCI archive: ${archive.replaceAll('.', '\\.')}`));
});

test('an unknown option is a usage error, exit 2', () => {
  const wrong = runImage(['--push']);
  assert.equal(wrong.status, 2);
  assert.match(wrong.stderr, /Unknown option '--push'[\s\S]*usage: npm run image/);
});

interface ImageConfig {
  os: string;
  architecture: string;
  config: { User?: string; Env?: string[]; Entrypoint?: string[]; WorkingDir?: string };
  rootfs: { diff_ids: string[] };
}

test('the OCI layout holds every blob under its digest, and the config names each layer by its tar digest', () => {
  assert.deepEqual(JSON.parse(readFileSync(join(layout, 'oci-layout'), 'utf8')), {
    imageLayoutVersion: '1.0.0',
  });
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  assert.equal(index.manifests.length, 1);
  const entry = index.manifests[0]!;
  assert.equal(entry.annotations?.['io.containerd.image.name'], `ghcr.io/portico/portico:${version}`);
  assert.equal(entry.annotations?.['org.opencontainers.image.ref.name'], version);
  const manifestBytes = readFileSync(blobFile(layout, entry.digest));
  assert.equal(sha256(manifestBytes), entry.digest);
  assert.equal(manifestBytes.length, entry.size);
  const manifest = JSON.parse(manifestBytes.toString('utf8')) as { config: Descriptor; layers: Descriptor[] };
  const configBytes = readFileSync(blobFile(layout, manifest.config.digest));
  assert.equal(sha256(configBytes), manifest.config.digest);
  const config = JSON.parse(configBytes.toString('utf8')) as ImageConfig;
  assert.equal(manifest.layers.length, 2, 'the runtime layer and the app layer');
  manifest.layers.forEach((layer, i) => {
    const compressed = readFileSync(blobFile(layout, layer.digest));
    assert.equal(sha256(compressed), layer.digest);
    assert.equal(compressed.length, layer.size);
    assert.equal(sha256(gunzipSync(compressed)), config.rootfs.diff_ids[i]);
  });
  assert.equal(config.os, 'linux');
  assert.equal(config.architecture, 'amd64');
  assert.equal(config.config.User, '65532:65532');
  assert.deepEqual(config.config.Entrypoint, ['/usr/bin/tini', '--', '/usr/local/bin/portico']);
  assert.equal(config.config.WorkingDir, '/app');
});

test('the file tree holds the runtime, the built app and production modules only', () => {
  for (const file of [
    'usr/local/bin/node',
    'usr/local/bin/portico',
    'usr/bin/tini',
    'app/dist/cli/main.js',
    'app/proto',
    'app/package.json',
    'app/node_modules/yaml/package.json',
    'app/node_modules/@grpc/grpc-js/package.json',
  ]) {
    assert.ok(existsSync(join(rootfs, file)), `${file} is missing`);
  }
  for (const devOnly of [
    'app/node_modules/typescript',
    'app/node_modules/tsx',
    'app/node_modules/@biomejs',
    'app/src',
  ]) {
    assert.ok(!existsSync(join(rootfs, devOnly)), `${devOnly} is in the image`);
  }
  const maps = spawnSync('find', [join(rootfs, 'app/dist'), '-name', '*.map'], { encoding: 'utf8' });
  assert.equal(maps.stdout, '', 'source maps are left out');
  assert.match(readFileSync(join(rootfs, 'etc/passwd'), 'utf8'), /^nonroot:x:65532:65532:/m);
});

test("the Dockerfile builds the same tree with the recipe's settings", () => {
  const dockerfile = readFileSync(join(REPO, 'Dockerfile'), 'utf8');
  const lines = dockerfile.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  const instruction = (name: string) =>
    lines.filter((l) => l.startsWith(`${name} `)).map((l) => l.slice(name.length + 1));
  assert.ok(
    instruction('RUN').some((r) => r.includes('npm run image -- --rootfs /rootfs')),
    'the build stage runs npm run image',
  );
  assert.deepEqual(instruction('FROM').at(-1), 'scratch');
  assert.deepEqual(instruction('COPY').at(-1), '--from=build /rootfs/ /');
  assert.deepEqual(instruction('USER'), [IMAGE_USER]);
  assert.deepEqual(instruction('ENV'), [IMAGE_ENV.join(' ')]);
  assert.deepEqual(instruction('WORKDIR').at(-1), IMAGE_WORKDIR);
  assert.deepEqual(
    instruction('ENTRYPOINT').map((e) => JSON.parse(e) as string[]),
    [IMAGE_ENTRYPOINT],
  );
  const ignored = readFileSync(join(REPO, '.dockerignore'), 'utf8').split('\n');
  for (const path of ['node_modules', 'dist'])
    assert.ok(ignored.includes(path), `.dockerignore lacks ${path}`);
});

/** A containerd of the test toolchain's own, on sockets in `dir`, with no CRI: just images and tasks. */
function startContainerd(dir: string, binaries: { containerd: string; runc: string }): ChildProcess {
  mkdirSync(join(dir, 'tmp'), { recursive: true });
  mkdirSync(join(dir, 's'), { recursive: true });
  writeFileSync(
    join(dir, 'config.toml'),
    `version = 4
root = '${dir}/root'
state = '${dir}/state'
temp = '${dir}/tmp'
imports = []
disabled_plugins = ['io.containerd.grpc.v1.cri', 'io.containerd.nri.v1.nri', 'io.containerd.internal.v1.opt',
  'io.containerd.tracing.processor.v1.otlp', 'io.containerd.internal.v1.tracing',
  'io.containerd.snapshotter.v1.btrfs', 'io.containerd.snapshotter.v1.zfs', 'io.containerd.snapshotter.v1.devmapper',
  'io.containerd.snapshotter.v1.aufs', 'io.containerd.snapshotter.v1.erofs', 'io.containerd.snapshotter.v1.blockfile',
  'io.containerd.differ.v1.erofs', 'io.containerd.mount-handler.v1.erofs']
[plugins.'io.containerd.server.v1.grpc']
  address = '${dir}/c.sock'
[plugins.'io.containerd.server.v1.ttrpc']
  address = '${dir}/c.sock.ttrpc'
[plugins.'io.containerd.shim.v1.manager']
  socket_dir = '${dir}/s'
`,
  );
  return spawn(binaries.containerd, ['--config', join(dir, 'config.toml')], {
    env: {
      ...process.env,
      PATH: `${join(binaries.containerd, '..')}:${join(binaries.runc, '..')}:${process.env.PATH}`,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

const toolchainBuilt = existsSync(manifestPath());

test('containerd imports the archive and runs portico in it', {
  skip: toolchainBuilt ? false : 'no test toolchain (npm run toolchain) to take containerd and runc from',
}, async () => {
  const manifest = readManifest();
  const binaries = {
    containerd: manifest.binaries.containerd ?? '',
    runc: manifest.binaries.runc ?? '',
    ctr: manifest.binaries.ctr ?? '',
  };
  const dir = join(work, 'containerd');
  const containerd = startContainerd(dir, binaries);
  const exited = new Promise((resolve) => containerd.on('exit', resolve));
  const ctr = (args: string[]) =>
    spawnSync(binaries.ctr, ['--address', join(dir, 'c.sock'), ...args], {
      encoding: 'utf8',
      env: {
        ...process.env,
        PATH: `${join(binaries.containerd, '..')}:${join(binaries.runc, '..')}:${process.env.PATH}`,
      },
      timeout: 120_000,
    });
  try {
    const deadline = Date.now() + 30_000;
    while (ctr(['version']).status !== 0) {
      assert.ok(Date.now() < deadline && containerd.exitCode === null, 'containerd did not start');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const imported = ctr(['images', 'import', archive]);
    assert.equal(imported.status, 0, imported.stderr);
    const ran = ctr([
      'run',
      '--rm',
      `ghcr.io/portico/portico:${version}`,
      'portico-image-test',
      'portico',
      'version',
    ]);
    assert.equal(ran.status, 0, ran.stderr);
    assert.match(ran.stdout, new RegExp(`^portico ${version.replaceAll('.', '\\.')} \\(Node\\.js v26\\.`));
    // The native relay loads in the image (its glibc, its Node): the proxy there relays layer 4 off Node's sockets.
    assert.match(ran.stdout, /^layer-4 relay: native$/m);
  } finally {
    containerd.kill('SIGTERM');
    await exited;
    const mounts = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[1] ?? '')
      .filter((m) => m.startsWith(dir))
      .sort()
      .reverse();
    for (const m of mounts) spawnSync('umount', [m]);
  }
});

// The Redis test image (toolchain/redis-image.ts), built into a cache folder of its own: its one layer unpacked
// holds the server and every library ldd named, and the server started in that file tree alone (chroot, as the
// image's non-root user) answers a real Redis client. Skips without root (chroot) or without redis-server.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createClient } from 'redis';
import { blobFile, type Descriptor } from '../../toolchain/oci.js';
import { buildRedisImage, HOST_REDIS_SERVER, sharedLibraries } from '../../toolchain/redis-image.js';
import { freePort } from '../support/http.js';
import { redisMissing } from '../support/redis.js';

const skip =
  process.getuid?.() !== 0 ? 'not root: chroot is needed to start the image’s server' : redisMissing();

test('the Redis image: the server and its libraries in one layer, serving from that file tree alone', {
  skip,
}, async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'portico-redis-image-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const saved = process.env.PORTICO_CACHE_DIR;
  process.env.PORTICO_CACHE_DIR = join(work, 'cache');
  const image = await buildRedisImage().finally(() => {
    if (saved === undefined) delete process.env.PORTICO_CACHE_DIR;
    else process.env.PORTICO_CACHE_DIR = saved;
  });
  assert.match(image.name, /^portico\.test\/redis:\d+\.\d+\.\d+$/);

  const layout = join(image.archive, '..', 'layout');
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  const manifest = JSON.parse(readFileSync(blobFile(layout, index.manifests[0]!.digest), 'utf8')) as {
    layers: Descriptor[];
  };
  assert.equal(manifest.layers.length, 1);
  const root = join(work, 'root');
  mkdirSync(root);
  const untar = spawnSync('tar', ['-xzf', blobFile(layout, manifest.layers[0]!.digest), '-C', root]);
  assert.equal(untar.status, 0, String(untar.stderr));
  for (const file of [HOST_REDIS_SERVER, ...sharedLibraries(HOST_REDIS_SERVER)])
    assert.ok(existsSync(join(root, file)), `${file} in the image`);

  const port = await freePort();
  const server = spawn(
    'chroot',
    ['--userspec=65532:65532', root, HOST_REDIS_SERVER, '--port', String(port), '--bind', '127.0.0.1'].concat(
      ['--save', '', '--appendonly', 'no', '--dir', '/data'],
    ),
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  t.after(async () => {
    server.kill('SIGTERM');
    await exited;
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    server.stdout.setEncoding('utf8').on('data', (text: string) => {
      out += text;
      if (out.includes('Ready to accept connections')) resolve();
    });
    server.once('exit', (code) => reject(new Error(`redis-server in the image exited (${code}): ${out}`)));
  });
  const client = createClient({ socket: { host: '127.0.0.1', port } });
  await client.connect();
  try {
    assert.equal(await client.ping(), 'PONG');
  } finally {
    // Closed before the server stops: a client whose server goes away fails with an unhandled error.
    await client.close();
  }
});

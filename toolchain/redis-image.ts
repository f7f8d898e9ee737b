// A Redis image for the Kubernetes tests (global rate limits): pods cannot reach the host, so Redis runs in the
// cluster. No registry and no Docker: the host's own Debian `redis-server` (a host package, artifacts.ts) and
// the shared libraries `ldd` says it loads, copied at the paths the loader looks for them, in one layer
// assembled by oci.ts. The binary is Debian's `redis-check-rdb`, which serves when it is named redis-server.
// Nothing here ships; the image is only imported into the test cluster's containerd.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { OciImageError } from './oci.js';
import { GROUP, hash, PASSWD } from './portico-image.js';
import { cachedTestImage, type TestImage } from './test-image.js';

/** The host's redis-server (Debian's redis-server package). */
export const HOST_REDIS_SERVER = '/usr/bin/redis-server';
/** Bumped when the recipe changes in a way its inputs do not show. */
const RECIPE_VERSION = '1';
const USER = '65532:65532';

function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  if (result.error !== undefined) throw new OciImageError(`${command}: ${result.error.message}`);
  if (result.status !== 0) throw new OciImageError(`${command} ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** The absolute paths `ldd` lists for the binary (the loader included), as the loader looks them up. */
export function sharedLibraries(binary: string): string[] {
  const paths = new Set<string>();
  for (const line of run('ldd', [binary]).split('\n')) {
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (match !== null) paths.add(match[1]!);
  }
  return [...paths].sort();
}

/** `7.0.15` from `Redis server v=7.0.15 sha=…`. */
function redisVersion(binary: string): string {
  const version = /v=(\S+)/.exec(run(binary, ['--version']))?.[1];
  if (version === undefined) throw new OciImageError(`${binary} --version: no version`);
  return version;
}

/** Builds the Redis test image from the host's redis-server (or finds it in the cache). */
export async function buildRedisImage(): Promise<TestImage> {
  if (!existsSync(HOST_REDIS_SERVER))
    throw new OciImageError(`${HOST_REDIS_SERVER} is missing (apt-get install -y redis-server)`);
  const binary = realpathSync(HOST_REDIS_SERVER);
  const libraries = sharedLibraries(binary);
  const name = `portico.test/redis:${redisVersion(HOST_REDIS_SERVER)}`;
  return cachedTestImage({
    kind: 'redis',
    key: hash(
      RECIPE_VERSION,
      name,
      readFileSync(binary),
      ...libraries.map((l) => `${l}:${hash(readFileSync(l))}`),
    ),
    name,
    base: [],
    config: { entrypoint: [HOST_REDIS_SERVER], user: USER, workingDir: '/data' },
    fill(root) {
      for (const file of [binary, ...libraries]) {
        // The loader opens the name ldd shows (often a symlink): the content goes there, as a plain file.
        const target = join(root, file === binary ? HOST_REDIS_SERVER : file);
        mkdirSync(dirname(target), { recursive: true });
        copyFileSync(realpathSync(file), target);
        chmodSync(target, 0o755);
      }
      mkdirSync(join(root, 'etc'), { recursive: true });
      writeFileSync(join(root, 'etc/passwd'), PASSWD);
      writeFileSync(join(root, 'etc/group'), GROUP);
      // Its working directory, writable by the non-root user whatever owner the layer gives it.
      mkdirSync(join(root, 'data'), { recursive: true });
      chmodSync(join(root, 'data'), 0o1777);
      if (process.getuid?.() === 0) run('chroot', [root, HOST_REDIS_SERVER, '--version']);
    },
  });
}

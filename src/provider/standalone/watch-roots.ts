// The paths a file watcher is given, resolved and sorted into files and directories; each must exist.
import { stat } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import { PorticoError } from '../../platform/errors.js';
import { notRegularFile } from '../../platform/read-regular-file.js';

export interface WatchRoots {
  /** Every root, resolved, in the order given. */
  readonly all: readonly string[];
  /** The roots that are files (read whatever their extension). */
  readonly files: ReadonlySet<string>;
  /** Whether `path` is a directory root or inside one. */
  inDirRoot(path: string): boolean;
  /** The file roots directly inside `dir`. */
  filesIn(dir: string): string[];
}

export async function resolveWatchRoots(paths: readonly string[]): Promise<WatchRoots> {
  const all = paths.map((p) => resolve(p));
  const files = new Set<string>();
  const dirs = new Set<string>();
  for (const root of all) {
    const info = await stat(root).catch((error: NodeJS.ErrnoException) => {
      throw new PorticoError(
        'E_IO',
        `${root}: ${error.code === 'ENOENT' ? 'no such file or directory' : error.message}`,
      );
    });
    if (!info.isDirectory() && !info.isFile()) throw notRegularFile(root, info);
    (info.isDirectory() ? dirs : files).add(root);
  }
  return {
    all,
    files,
    inDirRoot(path) {
      for (const root of dirs) if (path === root || path.startsWith(root + sep)) return true;
      return false;
    },
    filesIn: (dir) => [...files].filter((file) => dirname(file) === dir),
  };
}

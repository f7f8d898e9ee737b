// One `fs.watch` per directory (Node 20's recursive mode on Linux is not relied on): renewed when the directory
// is re-created (a watcher dies with its inode), dropped when the directory vanishes from a scanned subtree.
import { type FSWatcher, watch } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { sep } from 'node:path';

export interface DirectoryWatchers {
  /** Watches `dir`, anew when it is not the directory watched before (it was re-created). */
  ensure(dir: string): Promise<void>;
  /** Stops watching the directories inside `scopes` that a scan did not visit (by real path), but `keep`'s. */
  dropUnvisited(
    scopes: readonly string[],
    visited: ReadonlySet<string>,
    keep: (dir: string) => boolean,
  ): Promise<void>;
  close(): void;
}

/** `onEvent` gets the watched directory and the entry the event names (null when it names none). */
export function directoryWatchers(
  onEvent: (dir: string, filename: string | null) => void,
): DirectoryWatchers {
  /** Directory → its watcher and the inode watched. */
  const watchers = new Map<string, { watcher: FSWatcher; ino: number }>();
  let closed = false;
  return {
    async ensure(dir) {
      const ino = (await stat(dir).catch(() => undefined))?.ino;
      const current = watchers.get(dir);
      if (closed || ino === undefined || current?.ino === ino) return;
      current?.watcher.close();
      try {
        const watcher = watch(dir, { persistent: false }, (_event, filename) => onEvent(dir, filename));
        // A watcher dies with its directory; the poll (or the parent's event) finds a re-created one.
        watcher.on('error', () => {
          watcher.close();
          if (watchers.get(dir)?.watcher === watcher) watchers.delete(dir);
        });
        watchers.set(dir, { watcher, ino });
      } catch {
        // The directory vanished between stat and watch: the next scan sees that.
      }
    },
    async dropUnvisited(scopes, visited, keep) {
      for (const dir of watchers.keys()) {
        const inScope = scopes.some((t) => dir === t || dir.startsWith(t + sep));
        if (inScope && !visited.has(await realpath(dir).catch(() => '')) && !keep(dir)) {
          watchers.get(dir)?.watcher.close();
          watchers.delete(dir);
        }
      }
    },
    close() {
      closed = true;
      for (const { watcher } of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}

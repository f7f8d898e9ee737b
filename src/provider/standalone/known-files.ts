// What the file watcher last read of each file: its content and stat signature, so a rescan reads only files
// that changed, and a file caught empty mid-write or unreadable keeps its last good content.
import { type Stats, statSync } from 'node:fs';
import { PorticoError } from '../../platform/errors.js';
import {
  NotRegularFileError,
  notRegularFile,
  readRegularFileSync,
} from '../../platform/read-regular-file.js';

interface Known {
  content: string;
  signature: string;
}

export interface KnownFiles {
  /** Every file known, with its last good content. */
  contents(): Map<string, string>;
  /** Every file known. */
  paths(): IterableIterator<string>;
  /** The next read of `path` reads it even if its signature is the same (an event named it). */
  forceRead(path: string): void;
  /**
   * The content of `path` when it is new or changed since the last read; undefined when it is unchanged,
   * unreadable (reported), gone, or read empty after having content (held until `takeEmpty`). `settling`:
   * take an empty file as it reads.
   */
  readIfChanged(path: string, settling?: boolean): string | undefined;
  /** Whether some file read empty and waits to settle. */
  hasEmpty(): boolean;
  /** The files that read empty, now to be read as they are (each forced). */
  takeEmpty(): string[];
  /** A resource-named entry that is not a regular file (a FIFO…): reported once, never opened. */
  reportNotRegular(path: string, info: Stats): void;
  /** `path` is a regular file now: should it turn into something else, that is reported again. */
  markRegular(path: string): void;
  /** Forgets `path`; whether it was known. */
  forget(path: string): boolean;
}

export function knownFiles(onError: (error: PorticoError) => void): KnownFiles {
  const known = new Map<string, Known>();
  const forced = new Set<string>();
  /** Files that read empty after having content: an in-place write (truncate, then write) caught midway? */
  const empty = new Set<string>();
  const notRegular = new Set<string>();

  function reportOnce(path: string, error: PorticoError): void {
    if (!notRegular.has(path)) onError(error);
    notRegular.add(path);
  }

  return {
    contents: () => new Map([...known].map(([path, k]) => [path, k.content])),
    paths: () => known.keys(),
    forceRead: (path) => void forced.add(path),
    readIfChanged(path, settling = false) {
      const previous = known.get(path);
      const force = forced.delete(path);
      let signature: string;
      let content: string;
      try {
        const info = statSync(path);
        signature = `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
        if (!force && previous?.signature === signature) return undefined;
        content = readRegularFileSync(path);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (error instanceof NotRegularFileError) reportOnce(path, error);
        else if (code !== 'ENOENT') {
          onError(
            new PorticoError('E_IO', `${path}: cannot read: ${(error as Error).message}`, { cause: error }),
          );
        }
        return undefined;
      }
      // Empty after having content (truncate, then write), or brand new and still empty (created, not yet
      // written): the write's own event usually follows at once; only a file that stays empty is taken as such.
      if (!settling && content.length === 0 && (previous === undefined || previous.content.length > 0)) {
        empty.add(path);
        return undefined;
      }
      known.set(path, { content, signature });
      return previous?.content === content ? undefined : content;
    },
    hasEmpty: () => empty.size > 0,
    takeEmpty() {
      const taken = [...empty];
      empty.clear();
      for (const path of taken) forced.add(path);
      return taken;
    },
    reportNotRegular(path, info) {
      if (!notRegular.has(path)) reportOnce(path, notRegularFile(path, info));
    },
    markRegular: (path) => void notRegular.delete(path),
    forget: (path) => known.delete(path),
  };
}

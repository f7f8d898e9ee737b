// Follows a proxy's log file from an offset and hands over whole lines: proxies write to files (a pipe to the
// controller would break, with EPIPE, when the controller dies), and the controller still shows their lines.
import { closeSync, type FSWatcher, openSync, readSync, statSync, watch } from 'node:fs';

export interface LogFollower {
  stop(): void;
}

const POLL_MS = 250;
const CHUNK = 64 * 1024;

export function followLog(file: string, offset: number, onLine: (line: string) => void): LogFollower {
  let position = offset;
  let partial = '';
  let stopped = false;

  function readNew(): void {
    if (stopped) return;
    let size: number;
    try {
      size = statSync(file).size;
    } catch {
      return; // not there (yet)
    }
    if (size < position) position = 0; // truncated or replaced: start over
    if (size === position) return;
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch {
      return;
    }
    try {
      const buffer = Buffer.alloc(CHUNK);
      while (position < size) {
        const n = readSync(fd, buffer, 0, Math.min(CHUNK, size - position), position);
        if (n <= 0) break;
        position += n;
        partial += buffer.toString('utf8', 0, n);
      }
    } finally {
      closeSync(fd);
    }
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) onLine(line);
  }

  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(file, () => readNew());
    watcher.on('error', () => {});
  } catch {
    // No file yet, or no inotify: the poll below still reads it.
  }
  const timer = setInterval(readNew, POLL_MS);
  timer.unref();
  readNew();
  return {
    stop() {
      readNew();
      stopped = true;
      clearInterval(timer);
      watcher?.close();
    },
  };
}

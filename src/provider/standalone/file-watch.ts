// Watches resource files and directories (recursively) and reports what changed, in coalesced batches.
//
// `fs.watch` on each directory gives millisecond reactions (Node 20's recursive mode on Linux is not relied
// on); a slow full poll catches anything the watchers miss (network file systems, a re-created root).
// Events only say "look here": the truth is always a fresh readdir/stat/read, compared with what was seen.
import { type FSWatcher, type Stats, statSync, watch } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve, sep } from 'node:path';
import { PorticoError } from '../../platform/errors.js';
import { logToStderr } from '../../platform/log-line.js';
import {
  NotRegularFileError,
  notRegularFile,
  readRegularFileSync,
} from '../../platform/read-regular-file.js';
import { traceStage } from '../../trace/propagation-trace.js';

export interface FileBatch {
  /** Files that are new or whose content changed (absolute path → content). */
  changed: Map<string, string>;
  /** Files that disappeared (absolute paths). */
  removed: string[];
}

export interface FileWatchOptions {
  /** Files (any extension) and directories (their `.yaml`/`.yml`/`.json` files, recursively). */
  paths: readonly string[];
  /** Called with the initial full read first, then with each change; never concurrently. Awaited; what it
   * throws is reported through `onError` and that batch is not repeated, so it should handle its own errors. */
  onBatch: (batch: FileBatch) => void | Promise<void>;
  /** A file that cannot be read: its last content stays in force. */
  onError?: (error: PorticoError) => void;
  /** How long events are gathered into one batch. */
  debounceMs?: number;
  /** Full rescan period, the safety net under `fs.watch`; 0 turns it off. */
  pollIntervalMs?: number;
  /** A file must stay gone (or empty) this long before it is reported removed (or emptied), so editors'
   * rename-and-replace and in-place truncate-then-write are no removal. */
  removalDelayMs?: number;
}

export interface FileWatcher {
  /** Every file currently known, with its content. */
  readonly files: ReadonlyMap<string, string>;
  close(): Promise<void>;
}

// Gathering window: none by default (the events already queued are taken together, on the next turn of the
// event loop). A save's later steps raise their own events and are read then; a file caught empty mid-write
// or missing mid-rename is held by the empty-file and removal delays, so a window would only add latency.
const DEFAULTS = { debounceMs: 0, pollIntervalMs: 2000, removalDelayMs: 50 };
const RESOURCE_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);
// Files are stat'ed and read synchronously: for a resource file that costs ~0.03 ms, where the thread-pool round
// trips of fs/promises cost ~0.7 ms each, and a full scan (start, the poll) of thousands of files would hold
// every edit queued behind it for hundreds of ms. Walks yield to the event loop every so many entries.
const ENTRIES_PER_TURN = 256;

function statSyncOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

interface Known {
  content: string;
  signature: string;
}

export async function watchFiles(options: FileWatchOptions): Promise<FileWatcher> {
  const settings = { ...DEFAULTS, ...definedOnly(options) };
  const onError = options.onError ?? ((e: PorticoError) => logToStderr(`portico: ${e.message}`));
  const roots = options.paths.map((p) => resolve(p));
  const fileRoots = new Set<string>();
  const dirRoots = new Set<string>();
  for (const root of roots) {
    const info = await stat(root).catch((error: NodeJS.ErrnoException) => {
      throw new PorticoError(
        'E_IO',
        `${root}: ${error.code === 'ENOENT' ? 'no such file or directory' : error.message}`,
      );
    });
    if (!info.isDirectory() && !info.isFile()) throw notRegularFile(root, info);
    (info.isDirectory() ? dirRoots : fileRoots).add(root);
  }

  const known = new Map<string, Known>();
  /** Directory → its watcher and the inode watched (a re-created directory needs a new watcher). */
  const watchers = new Map<string, { watcher: FSWatcher; ino: number }>();
  const dirtyScopes = new Set<string>();
  const forceRead = new Set<string>();
  const pendingRemoval = new Set<string>();
  /** Files that read empty after having content: an in-place write (truncate, then write) caught midway? */
  const pendingEmpty = new Set<string>();
  /** Resource-named entries that are not regular files (a FIFO…), reported once each and never opened. */
  const notRegular = new Set<string>();
  /** Set while a batch is being gathered: cancels it. */
  let cancelGathering: (() => void) | undefined;
  let removalTimer: NodeJS.Timeout | undefined;
  let closed = false;
  let running: Promise<void> = Promise.resolve();

  function onEvent(dir: string, filename: string | null): void {
    if (closed) return;
    if (cancelGathering === undefined) traceStage('fs-event', filename ?? dir);
    if (filename !== null) {
      // Only the named entry needs a look: a file is re-read, a directory walked, a vanished one removed.
      const path = join(dir, filename);
      forceRead.add(path);
      if (fileRoots.has(path) || isUnderDirRoot(dir)) dirtyScopes.add(path);
    } else {
      if (isUnderDirRoot(dir)) dirtyScopes.add(dir);
      for (const file of fileRoots) if (dirname(file) === dir) dirtyScopes.add(file);
    }
    schedule();
  }

  function isUnderDirRoot(path: string): boolean {
    for (const root of dirRoots) if (path === root || path.startsWith(root + sep)) return true;
    return false;
  }

  async function ensureWatcher(dir: string): Promise<void> {
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
  }

  function schedule(): void {
    if (cancelGathering !== undefined || closed) return;
    const gathered = (): void => {
      cancelGathering = undefined;
      traceStage('gathered');
      const scopes = [...dirtyScopes];
      dirtyScopes.clear();
      enqueue(() => rescan(scopes));
    };
    // setTimeout waits at least 1 ms even for 0; setImmediate runs right after this turn's other events.
    if (settings.debounceMs > 0) {
      const timer = setTimeout(gathered, settings.debounceMs);
      cancelGathering = () => clearTimeout(timer);
    } else {
      const immediate = setImmediate(gathered);
      cancelGathering = () => clearImmediate(immediate);
    }
  }

  function enqueue(work: () => Promise<void>): void {
    running = running.then(work).catch((error: unknown) => {
      onError(
        new PorticoError('E_IO', `watching resource files failed: ${(error as Error).message}`, {
          cause: error,
        }),
      );
    });
  }

  /** Lists the resource files under `dir`, watching every directory before reading it (no gap for new files). */
  async function walk(dir: string, found: Set<string>, visited: Set<string>): Promise<void> {
    let real: string;
    try {
      real = await realpath(dir);
    } catch {
      return;
    }
    if (visited.has(real)) return; // a symlink loop
    visited.add(real);
    await ensureWatcher(dir);
    let entries: string[];
    try {
      entries = await readdir(dir);
    } catch {
      return;
    }
    for (const [i, name] of entries.entries()) {
      // Hidden entries: editor swap files, and Kubernetes' `..data` ConfigMap internals (reached via symlinks).
      if (name.startsWith('.')) continue;
      if (i > 0 && i % ENTRIES_PER_TURN === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      const path = join(dir, name);
      const info = statSyncOrUndefined(path);
      if (info?.isDirectory()) await walk(path, found, visited);
      else if (info !== undefined && isResourceFile(path)) {
        if (info.isFile()) {
          found.add(path);
          notRegular.delete(path);
        } else reportNotRegular(path, info);
      }
    }
  }

  /** Rescans the given directories and files (all roots when none given); emits what really changed. */
  async function rescan(scopes: string[], initial = false): Promise<void> {
    if (closed) return;
    const fullScan = scopes.length === 0;
    const targets = fullScan ? roots : collapse(scopes);
    const present = new Set<string>();
    const visited = new Set<string>();
    for (const target of targets) {
      if (fileRoots.has(target)) await ensureWatcher(dirname(target));
      const info = statSyncOrUndefined(target);
      if (info?.isDirectory()) await walk(target, present, visited);
      else if (info?.isFile() && (fileRoots.has(target) || isResourceFile(target))) present.add(target);
    }
    const prefixes = targets.map((t) => t + sep);
    const missing: string[] = [];
    for (const path of known.keys()) {
      if (present.has(path)) continue;
      if (targets.some((t, i) => path === t || path.startsWith(prefixes[i]!))) missing.push(path);
    }
    // A file root inside a scanned directory may lack a resource extension: ask it directly.
    for (const path of missing) {
      if (fileRoots.has(path) && (await stat(path).catch(() => undefined))?.isFile()) present.add(path);
    }
    const changed = new Map<string, string>();
    let checked = 0;
    for (const path of present) {
      pendingRemoval.delete(path);
      // A full scan stats every file: yield now and then so discovery and the admin API keep answering.
      if (++checked % ENTRIES_PER_TURN === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      const content = readIfChanged(path);
      if (content !== undefined) changed.set(path, content);
    }
    for (const path of missing) if (!present.has(path)) pendingRemoval.add(path);
    if ((pendingRemoval.size > 0 || pendingEmpty.size > 0) && removalTimer === undefined) {
      removalTimer = setTimeout(() => {
        removalTimer = undefined;
        enqueue(confirmRemovals);
      }, settings.removalDelayMs);
    }
    for (const dir of watchers.keys()) {
      // Directories that vanished from a scanned subtree stop being watched.
      const inScope = targets.some((t) => dir === t || dir.startsWith(t + sep));
      if (inScope && !visited.has(await realpath(dir).catch(() => '')) && !isParentOfFileRoot(dir)) {
        watchers.get(dir)?.watcher.close();
        watchers.delete(dir);
      }
    }
    traceStage('read', String(changed.size));
    if (initial || (changed.size > 0 && !closed)) await options.onBatch({ changed, removed: [] });
  }

  function reportNotRegular(path: string, info: Stats): void {
    if (notRegular.has(path)) return;
    notRegular.add(path);
    onError(notRegularFile(path, info));
  }

  function isParentOfFileRoot(dir: string): boolean {
    for (const file of fileRoots) if (dirname(file) === dir) return true;
    return false;
  }

  async function confirmRemovals(): Promise<void> {
    // An emptied file is taken as it reads now, once it had time to settle.
    const settled = new Map<string, string>();
    for (const path of [...pendingEmpty]) {
      pendingEmpty.delete(path);
      forceRead.add(path);
      const content = readIfChanged(path, true);
      if (content !== undefined) settled.set(path, content);
    }
    if (settled.size > 0 && !closed) await options.onBatch({ changed: settled, removed: [] });
    const removed: string[] = [];
    for (const path of [...pendingRemoval]) {
      pendingRemoval.delete(path);
      const info = await stat(path).catch(() => undefined);
      if (info?.isFile()) {
        // It came back (rename-and-replace): a changed file, not a removal.
        dirtyScopes.add(path);
        forceRead.add(path);
        schedule();
        continue;
      }
      if (known.delete(path)) removed.push(path);
    }
    if (removed.length > 0 && !closed) await options.onBatch({ changed: new Map(), removed: removed.sort() });
  }

  function readIfChanged(path: string, settling = false): string | undefined {
    const previous = known.get(path);
    const forced = forceRead.delete(path);
    let signature: string;
    let content: string;
    try {
      const info = statSync(path);
      signature = `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
      if (!forced && previous?.signature === signature) return undefined;
      content = readRegularFileSync(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (error instanceof NotRegularFileError) {
        if (!notRegular.has(path)) onError(error);
        notRegular.add(path);
      } else if (code !== 'ENOENT') {
        onError(
          new PorticoError('E_IO', `${path}: cannot read: ${(error as Error).message}`, { cause: error }),
        );
      }
      return undefined;
    }
    // Empty after having content (truncate, then write), or brand new and still empty (created, not yet
    // written): the write's own event usually follows at once; only a file that stays empty is taken as such.
    if (!settling && content.length === 0 && (previous === undefined || previous.content.length > 0)) {
      pendingEmpty.add(path);
      return undefined;
    }
    known.set(path, { content, signature });
    return previous?.content === content ? undefined : content;
  }

  await rescan([], true);
  const poll =
    settings.pollIntervalMs > 0
      ? setInterval(() => {
          if (!closed) enqueue(() => rescan([]));
        }, settings.pollIntervalMs)
      : undefined;
  poll?.unref();

  return {
    get files() {
      return new Map([...known].map(([path, k]) => [path, k.content]));
    },
    async close() {
      closed = true;
      cancelGathering?.();
      if (removalTimer !== undefined) clearTimeout(removalTimer);
      if (poll !== undefined) clearInterval(poll);
      for (const { watcher } of watchers.values()) watcher.close();
      watchers.clear();
      await running;
    },
  };
}

/** A resource file found in a watched directory: `.yaml`, `.yml` or `.json`, not hidden. */
function isResourceFile(path: string): boolean {
  const name = basename(path);
  return !name.startsWith('.') && RESOURCE_EXTENSIONS.has(extname(name).toLowerCase());
}

/** Drops scopes inside another scope, so each subtree is walked once. */
function collapse(scopes: string[]): string[] {
  const sorted = [...new Set(scopes)].sort();
  return sorted.filter((s) => !sorted.some((other) => other !== s && s.startsWith(other + sep)));
}

function definedOnly(options: FileWatchOptions): Partial<typeof DEFAULTS> {
  const out: Partial<typeof DEFAULTS> = {};
  if (options.debounceMs !== undefined) out.debounceMs = options.debounceMs;
  if (options.pollIntervalMs !== undefined) out.pollIntervalMs = options.pollIntervalMs;
  if (options.removalDelayMs !== undefined) out.removalDelayMs = options.removalDelayMs;
  return out;
}

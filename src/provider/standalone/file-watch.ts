// Watches resource files and directories (recursively) and reports what changed, in coalesced batches.
//
// `fs.watch` on each directory gives millisecond reactions (directory-watchers.ts); a slow full poll catches
// anything the watchers miss (network file systems, a re-created root). Events only say "look here": the truth
// is always a fresh readdir/stat/read, compared with what was seen (known-files.ts).
import { type Stats, statSync } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, extname, join, sep } from 'node:path';
import { PorticoError } from '../../platform/errors.js';
import type { StageTrace } from '../../trace/propagation-trace.js';
import { type DirectoryWatchers, directoryWatchers } from './directory-watchers.js';
import { type GatherWindow, gatherWindow, type SerialQueue, serialQueue } from './event-batching.js';
import { type KnownFiles, knownFiles } from './known-files.js';
import { resolveWatchRoots, type WatchRoots } from './watch-roots.js';

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
  /** A file that cannot be read: its last content stays in force. The caller says so (logs it, keeps it). */
  onError: (error: PorticoError) => void;
  /** How long events are gathered into one batch. */
  debounceMs?: number;
  /** Full rescan period, the safety net under `fs.watch`; 0 turns it off. */
  pollIntervalMs?: number;
  /** A file must stay gone (or empty) this long before it is reported removed (or emptied), so editors'
   * rename-and-replace and in-place truncate-then-write are no removal, even from a writer the machine's load
   * holds up between its truncate and its write (50 ms was seen to be too short under load: routes went). */
  removalDelayMs?: number;
  /** Told when an event arrives, its batch is gathered and its files are read (diagnostics). */
  trace?: StageTrace;
}

export interface FileWatcher {
  /** Every file currently known, with its content. */
  readonly files: ReadonlyMap<string, string>;
  close(): Promise<void>;
}

// Gathering window: none by default (the events already queued are taken together, on the next turn of the
// event loop). A save's later steps raise their own events and are read then; a file caught empty mid-write
// or missing mid-rename is held by the empty-file and removal delays, so a window would only add latency.
const DEFAULTS = { debounceMs: 0, pollIntervalMs: 2000, removalDelayMs: 500 };
const RESOURCE_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);
// Files are stat'ed and read synchronously: for a resource file that costs ~0.03 ms, where the thread-pool round
// trips of fs/promises cost ~0.7 ms each, and a full scan (start, the poll) of thousands of files would hold
// every edit queued behind it for hundreds of ms. Walks yield to the event loop every so many entries.
const ENTRIES_PER_TURN = 256;

/** One watch: its parts and the paths waiting for a look. */
interface Watch {
  settings: typeof DEFAULTS;
  onBatch: FileWatchOptions['onBatch'];
  onError: (error: PorticoError) => void;
  trace: StageTrace;
  roots: WatchRoots;
  known: KnownFiles;
  watchers: DirectoryWatchers;
  window: GatherWindow;
  queue: SerialQueue;
  /** Files and directories an event pointed at since the last batch. */
  dirtyScopes: Set<string>;
  /** Files a scan did not find: removed unless they come back within the removal delay. */
  pendingRemoval: Set<string>;
  removalTimer: NodeJS.Timeout | undefined;
  closed: boolean;
}

export async function watchFiles(options: FileWatchOptions): Promise<FileWatcher> {
  const settings = { ...DEFAULTS, ...definedOnly(options) };
  const { onError } = options;
  const w: Watch = {
    settings,
    onBatch: options.onBatch,
    onError,
    trace: options.trace ?? (() => {}),
    roots: await resolveWatchRoots(options.paths),
    known: knownFiles(onError),
    watchers: directoryWatchers((dir, filename) => onEvent(w, dir, filename)),
    window: gatherWindow(settings.debounceMs, () => gathered(w)),
    queue: serialQueue((error) =>
      onError(
        new PorticoError('E_IO', `watching resource files failed: ${(error as Error).message}`, {
          cause: error,
        }),
      ),
    ),
    dirtyScopes: new Set(),
    pendingRemoval: new Set(),
    removalTimer: undefined,
    closed: false,
  };
  await rescan(w, [], true);
  const poll =
    settings.pollIntervalMs > 0
      ? setInterval(() => {
          if (!w.closed) w.queue.enqueue(() => rescan(w, []));
        }, settings.pollIntervalMs)
      : undefined;
  poll?.unref();

  return {
    get files() {
      return w.known.contents();
    },
    async close() {
      w.closed = true;
      w.window.cancel();
      if (w.removalTimer !== undefined) clearTimeout(w.removalTimer);
      if (poll !== undefined) clearInterval(poll);
      w.watchers.close();
      await w.queue.idle();
    },
  };
}

function onEvent(w: Watch, dir: string, filename: string | null): void {
  if (w.closed) return;
  if (!w.window.isOpen) w.trace('fs-event', filename ?? dir);
  if (filename !== null) {
    // Only the named entry needs a look: a file is re-read, a directory walked, a vanished one removed.
    const path = join(dir, filename);
    w.known.forceRead(path);
    if (w.roots.files.has(path) || w.roots.inDirRoot(dir)) w.dirtyScopes.add(path);
  } else {
    if (w.roots.inDirRoot(dir)) w.dirtyScopes.add(dir);
    for (const file of w.roots.filesIn(dir)) w.dirtyScopes.add(file);
  }
  schedule(w);
}

function schedule(w: Watch): void {
  if (!w.closed) w.window.open();
}

function gathered(w: Watch): void {
  w.trace('gathered');
  const scopes = [...w.dirtyScopes];
  w.dirtyScopes.clear();
  w.queue.enqueue(() => rescan(w, scopes));
}

/** Rescans the given directories and files (all roots when none given); emits what really changed. */
async function rescan(w: Watch, scopes: string[], initial = false): Promise<void> {
  if (w.closed) return;
  const targets = scopes.length === 0 ? w.roots.all : collapse(scopes);
  const visited = new Set<string>();
  const present = await findPresent(w, targets, visited);
  const missing = await missingFrom(w, targets, present);
  const changed = new Map<string, string>();
  let checked = 0;
  for (const path of present) {
    w.pendingRemoval.delete(path);
    // A full scan stats every file: yield now and then so discovery and the admin API keep answering.
    if (++checked % ENTRIES_PER_TURN === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const content = w.known.readIfChanged(path);
    if (content !== undefined) changed.set(path, content);
  }
  for (const path of missing) if (!present.has(path)) w.pendingRemoval.add(path);
  startRemovalTimer(w);
  // Directories that vanished from a scanned subtree stop being watched.
  await w.watchers.dropUnvisited(targets, visited, (dir) => w.roots.filesIn(dir).length > 0);
  w.trace('read', String(changed.size));
  if (initial || (changed.size > 0 && !w.closed)) await w.onBatch({ changed, removed: [] });
}

/** The files now under `targets`, watching every directory walked; `visited` gets their real paths. */
async function findPresent(w: Watch, targets: readonly string[], visited: Set<string>): Promise<Set<string>> {
  const present = new Set<string>();
  for (const target of targets) {
    if (w.roots.files.has(target)) await w.watchers.ensure(dirname(target));
    const info = statSyncOrUndefined(target);
    if (info?.isDirectory()) await walk(w, target, present, visited);
    else if (info?.isFile() && (w.roots.files.has(target) || isResourceFile(target))) present.add(target);
  }
  return present;
}

/** Known files under `targets` that the scan did not find; a file root found after all joins `present`. */
async function missingFrom(w: Watch, targets: readonly string[], present: Set<string>): Promise<string[]> {
  const prefixes = targets.map((t) => t + sep);
  const missing: string[] = [];
  for (const path of w.known.paths()) {
    if (present.has(path)) continue;
    if (targets.some((t, i) => path === t || path.startsWith(prefixes[i]!))) missing.push(path);
  }
  // A file root inside a scanned directory may lack a resource extension: ask it directly.
  for (const path of missing) {
    if (w.roots.files.has(path) && (await stat(path).catch(() => undefined))?.isFile()) present.add(path);
  }
  return missing;
}

/** Lists the resource files under `dir`, watching every directory before reading it (no gap for new files). */
async function walk(w: Watch, dir: string, found: Set<string>, visited: Set<string>): Promise<void> {
  let real: string;
  try {
    real = await realpath(dir);
  } catch {
    return;
  }
  if (visited.has(real)) return; // a symlink loop
  visited.add(real);
  await w.watchers.ensure(dir);
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
    if (info?.isDirectory()) await walk(w, path, found, visited);
    else if (info !== undefined && isResourceFile(path)) {
      if (info.isFile()) {
        found.add(path);
        w.known.markRegular(path);
      } else w.known.reportNotRegular(path, info);
    }
  }
}

/** Files missing or read empty are looked at again once the removal delay has passed. */
function startRemovalTimer(w: Watch): void {
  if ((w.pendingRemoval.size === 0 && !w.known.hasEmpty()) || w.removalTimer !== undefined) return;
  w.removalTimer = setTimeout(() => {
    w.removalTimer = undefined;
    w.queue.enqueue(() => confirmRemovals(w));
  }, w.settings.removalDelayMs);
}

async function confirmRemovals(w: Watch): Promise<void> {
  // An emptied file is taken as it reads now, once it had time to settle.
  const settled = new Map<string, string>();
  for (const path of w.known.takeEmpty()) {
    const content = w.known.readIfChanged(path, true);
    if (content !== undefined) settled.set(path, content);
  }
  if (settled.size > 0 && !w.closed) await w.onBatch({ changed: settled, removed: [] });
  const removed: string[] = [];
  for (const path of [...w.pendingRemoval]) {
    w.pendingRemoval.delete(path);
    const info = await stat(path).catch(() => undefined);
    if (info?.isFile()) {
      // It came back (rename-and-replace): a changed file, not a removal.
      w.dirtyScopes.add(path);
      w.known.forceRead(path);
      schedule(w);
      continue;
    }
    if (w.known.forget(path)) removed.push(path);
  }
  if (removed.length > 0 && !w.closed) await w.onBatch({ changed: new Map(), removed: removed.sort() });
}

function statSyncOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
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

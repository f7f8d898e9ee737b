// The standalone provider's view of its files: the last good content of every file and object, with the
// metadata an API server would assign (uid, creationTimestamp, generation) kept stable across restarts.
import type { ResourceError } from '../../api/common.js';
import { type ApiObject, describeObject } from '../../api/kinds.js';
import { parseYamlFile } from '../../api/load.js';
import { partitionPoint } from '../../platform/sorted-search.js';
import { type FileEntry, type FileIndex, fileIndex } from './file-index.js';
import type { FileBatch } from './file-watch.js';
import { loadObjectMetadata, type ObjectMetadata } from './object-metadata.js';

export interface ApplyResult {
  /** Errors of this batch, each naming file, line, object and field. */
  errors: ResourceError[];
  /** Whether the set of objects (or any object) changed. */
  changed: boolean;
}

export interface ResourceStore {
  apply(batch: FileBatch): ApplyResult;
  /** Every served object; one per id (the first file in path order wins a duplicate). Stable identity. */
  objects(): ApiObject[];
  /**
   * What is wrong with the files now (each file's errors from its latest content, and duplicates), so a
   * broken file stays visible after its log line scrolled away; fixed or removed files have none.
   */
  errors(): ResourceError[];
  /** Served objects with current errors that concern them: their own, or their file's as a whole. */
  objectErrors(): Map<ApiObject, ResourceError[]>;
  /** Persists uids, creation times and generations so a restart keeps them. */
  save(): Promise<void>;
}

/** The store's state: the files, the objects served from them, and their metadata. */
interface Store {
  meta: ObjectMetadata;
  files: FileIndex;
  /** Every served object, in path order. */
  served: ApiObject[];
  /** The file each served object comes from (sorted, like `served`), to find one file's objects quickly. */
  servedFrom: string[];
  /** Each file's parse and validation errors, from its latest content. */
  fileErrors: Map<string, ResourceError[]>;
  now: () => Date;
}

// A parse error has no object to pin it on: the whole file keeps its last good content.
function isFileLevel(error: ResourceError): boolean {
  return error.object === undefined;
}

export async function openResourceStore(options: {
  stateDir?: string;
  now?: () => Date;
}): Promise<ResourceStore> {
  const store: Store = {
    meta: await loadObjectMetadata(options.stateDir),
    files: fileIndex(),
    served: [],
    servedFrom: [],
    fileErrors: new Map(),
    now: options.now ?? (() => new Date()),
  };
  return {
    apply: (batch) => applyBatch(store, batch),
    objects: () => store.served,
    errors() {
      // Duplicates from the current definitions, not from when a file was read (the first may be gone since).
      const out = [...store.fileErrors.values()].flat().concat(store.files.duplicates());
      return out.sort((a, b) => compare(a.file ?? '', b.file ?? '') || (a.line ?? 0) - (b.line ?? 0));
    },
    objectErrors: () => objectErrors(store),
    save: () => store.meta.save(),
  };
}

function applyBatch(store: Store, batch: FileBatch): ApplyResult {
  // One clock reading per batch: objects that appear together are equally old, so their order (merged-listener
  // conflicts, route precedence) falls back to namespace/name as it does for files without timestamps.
  const batchTime = store.now();
  const errors: ResourceError[] = [];
  const vanished: string[] = [];
  const firstApply = store.files.size === 0;
  const single = !firstApply && batch.removed.length === 0 && batch.changed.size === 1;
  const [onlyPath] = batch.changed.keys();
  const onlyBefore = onlyPath === undefined ? undefined : store.files.get(onlyPath);
  for (const path of batch.removed) {
    vanished.push(...(store.files.get(path)?.objects.keys() ?? []));
    store.files.set(path, undefined);
    store.fileErrors.delete(path);
  }
  for (const [path, text] of batch.changed) {
    const previous = store.files.get(path);
    const entry = parseFile(store, path, text, batchTime, errors);
    if (entry === undefined) continue;
    vanished.push(...(previous?.objects.keys() ?? []));
    store.files.set(path, entry);
    errors.push(...store.files.duplicatesOf(path, entry));
  }
  const replaced =
    single && onlyPath !== undefined ? replaceFileObjects(store, onlyPath, onlyBefore) : undefined;
  if (replaced !== undefined) return { errors, changed: replaced };
  // Metadata loaded from the state directory for objects no file defines any more is dropped once.
  return { errors, changed: rebuild(store, firstApply ? store.meta.ids() : vanished) };
}

/**
 * The entry for a file's new content, its errors added to `errors`; undefined when the file cannot be parsed
 * as a whole and had good content before, which it keeps.
 */
function parseFile(
  store: Store,
  path: string,
  text: string,
  batchTime: Date,
  errors: ResourceError[],
): FileEntry | undefined {
  const parsed = parseYamlFile(path, text);
  errors.push(...parsed.errors);
  if (parsed.errors.length > 0) store.fileErrors.set(path, parsed.errors);
  else store.fileErrors.delete(path);
  const previous = store.files.get(path);
  if (parsed.errors.some(isFileLevel) && previous !== undefined) return undefined;
  const objects = new Map<string, ApiObject>();
  for (const loaded of parsed.objects) {
    const id = describeObject(loaded.object);
    objects.set(id, store.meta.fill(loaded.object, previous?.objects.get(id), batchTime));
  }
  // An invalid object keeps serving its last good version from this file.
  for (const error of parsed.errors) {
    const kept = error.object === undefined ? undefined : previous?.objects.get(error.object);
    if (kept !== undefined && error.object !== undefined) objects.set(error.object, kept);
  }
  return { objects };
}

/** `vanished`: ids whose file changed or went; those no longer served lose their metadata. */
function rebuild(store: Store, vanished: Iterable<string>): boolean {
  const seen = new Set<string>();
  const next: ApiObject[] = [];
  const from: string[] = [];
  for (const [path, entry] of store.files.entries()) {
    for (const [id, object] of entry.objects) {
      if (seen.has(id)) continue;
      seen.add(id);
      next.push(object);
      from.push(path);
    }
  }
  // A deleted object is new when it comes back (creation time decides merged-listener conflicts).
  for (const id of vanished) if (!seen.has(id)) store.meta.forget(id);
  const changed = next.length !== store.served.length || next.some((o, i) => o !== store.served[i]);
  store.served = next;
  store.servedFrom = from;
  return changed;
}

/**
 * One file changed and none of its objects (before or after) is defined by another file: its objects are
 * replaced where they stand, without walking every file. Undefined when that does not hold.
 */
function replaceFileObjects(store: Store, path: string, before: FileEntry | undefined): boolean | undefined {
  const { files, served, servedFrom } = store;
  const entry = files.get(path);
  if (entry === undefined) return undefined;
  for (const id of entry.objects.keys()) if (files.definitions(id) !== 1) return undefined;
  for (const id of before?.objects.keys() ?? [])
    if (files.definitions(id) > (entry.objects.has(id) ? 1 : 0)) return undefined;
  const start = partitionPoint(servedFrom.length, (i) => servedFrom[i]! < path);
  const end = partitionPoint(servedFrom.length, (i) => servedFrom[i]! <= path);
  const objects = [...entry.objects.values()];
  const changed = end - start !== objects.length || objects.some((o, i) => o !== served[start + i]);
  for (const id of before?.objects.keys() ?? []) if (!entry.objects.has(id)) store.meta.forget(id);
  if (!changed) return false;
  store.served = [...served.slice(0, start), ...objects, ...served.slice(end)];
  store.servedFrom = [...servedFrom.slice(0, start), ...objects.map(() => path), ...servedFrom.slice(end)];
  return true;
}

function objectErrors(store: Store): Map<ApiObject, ResourceError[]> {
  const out = new Map<ApiObject, ResourceError[]>();
  if (store.fileErrors.size === 0) return out;
  store.served.forEach((object, i) => {
    const found = store.fileErrors.get(store.servedFrom[i]!);
    if (found === undefined) return;
    const id = describeObject(object);
    const own = found.filter((e) => e.object === undefined || e.object === id);
    if (own.length > 0) out.set(object, own);
  });
  return out;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

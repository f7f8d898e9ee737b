// The standalone provider's view of its files: the last good content of every file and object, with the
// metadata an API server would assign (uid, creationTimestamp, generation) kept stable across restarts.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ResourceError } from '../../api/common.js';
import { type ApiObject, describeObject } from '../../api/kinds.js';
import { parseYamlFile } from '../../api/load.js';
import { writeFileAtomic } from '../../platform/write-file-atomic.js';
import type { FileBatch } from './file-watch.js';

export interface ApplyResult {
  /** Errors of this batch, each naming file, line, object and field. */
  errors: ResourceError[];
  /** Whether the set of objects (or any object) changed. */
  changed: boolean;
}

interface StoredMeta {
  uid: string;
  creationTimestamp: string;
  generation: number;
  specHash: string;
}

interface FileEntry {
  /** Object id → the object as served (metadata filled in). */
  objects: Map<string, ApiObject>;
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

function specHash(object: ApiObject): string {
  const { metadata: _metadata, status: _status, ...rest } = object as ApiObject & { status?: unknown };
  return createHash('sha256').update(JSON.stringify(rest)).digest('hex').slice(0, 16);
}

// A parse error has no object to pin it on: the whole file keeps its last good content.
function isFileLevel(error: ResourceError): boolean {
  return error.object === undefined;
}

export async function openResourceStore(options: {
  stateDir?: string;
  now?: () => Date;
}): Promise<ResourceStore> {
  const now = options.now ?? (() => new Date());
  const metaFile = options.stateDir === undefined ? undefined : join(options.stateDir, 'objects.json');
  const meta = new Map<string, StoredMeta>();
  if (metaFile !== undefined) {
    try {
      const saved = JSON.parse(await readFile(metaFile, 'utf8')) as Record<string, StoredMeta>;
      for (const [id, m] of Object.entries(saved)) meta.set(id, m);
    } catch {
      // No state yet (first start) or unreadable: objects get fresh metadata.
    }
  }
  const files = new Map<string, FileEntry>();
  /** File paths in order (the first file defining an id serves it), kept sorted as files come and go. */
  const paths: string[] = [];
  /** Object id → the files defining it, for duplicate reports without scanning every file. */
  const definedIn = new Map<string, Set<string>>();
  let served: ApiObject[] = [];
  // One clock reading per batch: objects that appear together are equally old, so their order (merged-listener
  // conflicts, route precedence) falls back to namespace/name as it does for files without timestamps.
  let batchTime = new Date(0); // set by every apply()
  /** The file each served object comes from (sorted, like `served`), to find one file's objects quickly. */
  let servedFrom: string[] = [];
  /** Each file's parse and validation errors, from its latest content. */
  const fileErrors = new Map<string, ResourceError[]>();

  function withMetadata(object: ApiObject, previous: ApiObject | undefined): ApiObject {
    const id = describeObject(object);
    const hash = specHash(object);
    let m = meta.get(id);
    if (m === undefined) {
      m = {
        uid:
          object.metadata.uid ??
          createHash('sha256').update(`${id}@${batchTime.toISOString()}`).digest('hex').slice(0, 32),
        creationTimestamp:
          object.metadata.creationTimestamp ?? batchTime.toISOString().replace(/\.\d+Z$/, 'Z'),
        generation: 1,
        specHash: hash,
      };
      meta.set(id, m);
    } else if (m.specHash !== hash) {
      m.generation += 1;
      m.specHash = hash;
    }
    const filled = {
      ...object,
      metadata: {
        ...object.metadata,
        uid: m.uid,
        creationTimestamp: object.metadata.creationTimestamp ?? m.creationTimestamp,
        generation: m.generation,
      },
    } as ApiObject;
    // Unchanged objects keep their identity: the translator memoises on it.
    if (previous !== undefined && JSON.stringify(previous) === JSON.stringify(filled)) return previous;
    return filled;
  }

  function pathIndex(path: string): number {
    let lo = 0;
    let hi = paths.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (paths[mid]! < path) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  function setFile(path: string, entry: FileEntry | undefined): void {
    const before = files.get(path);
    for (const id of before?.objects.keys() ?? []) {
      const owners = definedIn.get(id);
      owners?.delete(path);
      if (owners?.size === 0) definedIn.delete(id);
    }
    const at = pathIndex(path);
    if (entry === undefined) {
      if (before !== undefined) paths.splice(at, 1);
      files.delete(path);
      return;
    }
    if (before === undefined) paths.splice(at, 0, path);
    files.set(path, entry);
    for (const id of entry.objects.keys()) {
      const owners = definedIn.get(id);
      if (owners === undefined) definedIn.set(id, new Set([path]));
      else owners.add(path);
    }
  }

  /** `vanished`: ids whose file changed or went; those no longer served lose their metadata. */
  function rebuild(vanished: Iterable<string>): boolean {
    const seen = new Set<string>();
    const next: ApiObject[] = [];
    const from: string[] = [];
    for (const path of paths) {
      for (const [id, object] of files.get(path)!.objects) {
        if (seen.has(id)) continue;
        seen.add(id);
        next.push(object);
        from.push(path);
      }
    }
    // A deleted object is new when it comes back (creation time decides merged-listener conflicts).
    for (const id of vanished) if (!seen.has(id)) meta.delete(id);
    const changed = next.length !== served.length || next.some((o, i) => o !== served[i]);
    served = next;
    servedFrom = from;
    return changed;
  }

  /**
   * One file changed and none of its objects (before or after) is defined by another file: its objects are
   * replaced where they stand, without walking every file. Undefined when that does not hold.
   */
  function replaceFileObjects(path: string, before: FileEntry | undefined): boolean | undefined {
    const entry = files.get(path);
    if (entry === undefined) return undefined;
    for (const id of entry.objects.keys()) if (definedIn.get(id)?.size !== 1) return undefined;
    for (const id of before?.objects.keys() ?? [])
      if ((definedIn.get(id)?.size ?? 0) > (entry.objects.has(id) ? 1 : 0)) return undefined;
    const bound = (strict: boolean): number => {
      let lo = 0;
      let hi = servedFrom.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (servedFrom[mid]! < path || (strict && servedFrom[mid] === path)) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
    const start = bound(false);
    const end = bound(true);
    const objects = [...entry.objects.values()];
    const changed = end - start !== objects.length || objects.some((o, i) => o !== served[start + i]);
    for (const id of before?.objects.keys() ?? []) if (!entry.objects.has(id)) meta.delete(id);
    if (!changed) return false;
    served = [...served.slice(0, start), ...objects, ...served.slice(end)];
    servedFrom = [...servedFrom.slice(0, start), ...objects.map(() => path), ...servedFrom.slice(end)];
    return true;
  }

  function duplicates(path: string, entry: FileEntry): ResourceError[] {
    const errors: ResourceError[] = [];
    for (const id of entry.objects.keys()) {
      for (const otherPath of definedIn.get(id) ?? []) {
        if (otherPath === path) continue;
        const [first, second] = [path, otherPath].sort();
        errors.push({
          file: second,
          object: id,
          message: `also defined in ${first}; the definition there is served`,
        });
      }
    }
    return errors;
  }

  return {
    apply(batch) {
      batchTime = now();
      const errors: ResourceError[] = [];
      const vanished: string[] = [];
      const firstApply = files.size === 0;
      const single = !firstApply && batch.removed.length === 0 && batch.changed.size === 1;
      const [onlyPath] = batch.changed.keys();
      const onlyBefore = onlyPath === undefined ? undefined : files.get(onlyPath);
      for (const path of batch.removed) {
        vanished.push(...(files.get(path)?.objects.keys() ?? []));
        setFile(path, undefined);
        fileErrors.delete(path);
      }
      for (const [path, text] of batch.changed) {
        const parsed = parseYamlFile(path, text);
        errors.push(...parsed.errors);
        if (parsed.errors.length > 0) fileErrors.set(path, parsed.errors);
        else fileErrors.delete(path);
        const previous = files.get(path);
        if (parsed.errors.some(isFileLevel) && previous !== undefined) continue;
        const objects = new Map<string, ApiObject>();
        for (const loaded of parsed.objects) {
          const id = describeObject(loaded.object);
          objects.set(id, withMetadata(loaded.object, previous?.objects.get(id)));
        }
        // An invalid object keeps serving its last good version from this file.
        for (const error of parsed.errors) {
          const kept = error.object === undefined ? undefined : previous?.objects.get(error.object);
          if (kept !== undefined && error.object !== undefined) objects.set(error.object, kept);
        }
        const entry = { objects };
        vanished.push(...(previous?.objects.keys() ?? []));
        setFile(path, entry);
        errors.push(...duplicates(path, entry));
      }
      const replaced =
        single && onlyPath !== undefined ? replaceFileObjects(onlyPath, onlyBefore) : undefined;
      if (replaced !== undefined) return { errors, changed: replaced };
      // Metadata loaded from the state directory for objects no file defines any more is dropped once.
      return { errors, changed: rebuild(firstApply ? [...meta.keys()] : vanished) };
    },
    objects: () => served,
    errors() {
      const out = [...fileErrors.values()].flat();
      // Duplicates from the current definitions, not from when a file was read (the first may be gone since).
      for (const [id, owners] of definedIn) {
        if (owners.size < 2) continue;
        const [first, ...others] = [...owners].sort();
        for (const file of others) {
          out.push({ file, object: id, message: `also defined in ${first}; the definition there is served` });
        }
      }
      return out.sort((a, b) => compare(a.file ?? '', b.file ?? '') || (a.line ?? 0) - (b.line ?? 0));
    },
    objectErrors() {
      const out = new Map<ApiObject, ResourceError[]>();
      if (fileErrors.size === 0) return out;
      served.forEach((object, i) => {
        const found = fileErrors.get(servedFrom[i]!);
        if (found === undefined) return;
        const id = describeObject(object);
        const own = found.filter((e) => e.object === undefined || e.object === id);
        if (own.length > 0) out.set(object, own);
      });
      return out;
    },
    async save() {
      if (metaFile === undefined) return;
      const out: Record<string, StoredMeta> = {};
      for (const [id, m] of [...meta].sort(([a], [b]) => (a < b ? -1 : 1))) out[id] = m;
      await writeFileAtomic(metaFile, `${JSON.stringify(out, null, 2)}\n`);
    },
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// The standalone provider's view of its files: the last good content of every file and object, with the
// metadata an API server would assign (uid, creationTimestamp, generation) kept stable across restarts.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ResourceError } from '../../api/common.js';
import { type ApiObject, describeObject } from '../../api/kinds.js';
import { parseYamlFile } from '../../api/load.js';
import { writeFileAtomic } from '../../write-file-atomic.js';
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
  let served: ApiObject[] = [];

  function withMetadata(object: ApiObject, previous: ApiObject | undefined): ApiObject {
    const id = describeObject(object);
    const hash = specHash(object);
    let m = meta.get(id);
    if (m === undefined) {
      m = {
        uid:
          object.metadata.uid ??
          createHash('sha256').update(`${id}@${now().toISOString()}`).digest('hex').slice(0, 32),
        creationTimestamp:
          object.metadata.creationTimestamp ??
          now()
            .toISOString()
            .replace(/\.\d+Z$/, 'Z'),
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

  function rebuild(): boolean {
    const seen = new Map<string, ApiObject>();
    for (const path of [...files.keys()].sort()) {
      for (const [id, object] of files.get(path)!.objects) if (!seen.has(id)) seen.set(id, object);
    }
    const next = [...seen.values()];
    // A deleted object is new when it comes back (creation time decides merged-listener conflicts).
    for (const id of meta.keys()) if (!seen.has(id)) meta.delete(id);
    const changed = next.length !== served.length || next.some((o, i) => o !== served[i]);
    served = next;
    return changed;
  }

  function duplicates(path: string, entry: FileEntry): ResourceError[] {
    const errors: ResourceError[] = [];
    for (const [otherPath, other] of files) {
      if (otherPath === path) continue;
      for (const id of entry.objects.keys()) {
        if (other.objects.has(id)) {
          const [first, second] = [path, otherPath].sort();
          errors.push({
            file: second,
            object: id,
            message: `also defined in ${first}; the definition there is served`,
          });
        }
      }
    }
    return errors;
  }

  return {
    apply(batch) {
      const errors: ResourceError[] = [];
      for (const path of batch.removed) files.delete(path);
      for (const [path, text] of batch.changed) {
        const parsed = parseYamlFile(path, text);
        errors.push(...parsed.errors);
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
        files.set(path, entry);
        errors.push(...duplicates(path, entry));
      }
      return { errors, changed: rebuild() };
    },
    objects: () => served,
    async save() {
      if (metaFile === undefined) return;
      const out: Record<string, StoredMeta> = {};
      for (const [id, m] of [...meta].sort(([a], [b]) => (a < b ? -1 : 1))) out[id] = m;
      await writeFileAtomic(metaFile, `${JSON.stringify(out, null, 2)}\n`);
    },
  };
}

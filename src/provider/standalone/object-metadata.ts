// The metadata an API server would assign (uid, creationTimestamp, generation), kept per object id in the state
// directory so a restart keeps it; the generation moves when the object's spec changes.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type ApiObject, describeObject } from '../../api/kinds.js';
import { writeFileAtomic } from '../../platform/write-file-atomic.js';

interface StoredMeta {
  uid: string;
  creationTimestamp: string;
  generation: number;
  specHash: string;
}

export interface ObjectMetadata {
  /**
   * `object` with its uid, creation time and generation filled in; a new object gets them from `batchTime`.
   * `previous` itself when the result equals it: unchanged objects keep their identity (the translator memoises on it).
   */
  fill(object: ApiObject, previous: ApiObject | undefined, batchTime: Date): ApiObject;
  /** Drops an id's metadata: a deleted object is new when it comes back. */
  forget(id: string): void;
  /** Every id with metadata, loaded or assigned. */
  ids(): string[];
  /** Persists the metadata (when there is a state directory). */
  save(): Promise<void>;
}

function specHash(object: ApiObject): string {
  const { metadata: _metadata, status: _status, ...rest } = object as ApiObject & { status?: unknown };
  return createHash('sha256').update(JSON.stringify(rest)).digest('hex').slice(0, 16);
}

export async function loadObjectMetadata(stateDir: string | undefined): Promise<ObjectMetadata> {
  const file = stateDir === undefined ? undefined : join(stateDir, 'objects.json');
  const meta = new Map<string, StoredMeta>();
  if (file !== undefined) {
    try {
      const saved = JSON.parse(await readFile(file, 'utf8')) as Record<string, StoredMeta>;
      for (const [id, m] of Object.entries(saved)) meta.set(id, m);
    } catch {
      // No state yet (first start) or unreadable: objects get fresh metadata.
    }
  }
  return {
    fill(object, previous, batchTime) {
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
      if (previous !== undefined && JSON.stringify(previous) === JSON.stringify(filled)) return previous;
      return filled;
    },
    forget: (id) => void meta.delete(id),
    ids: () => [...meta.keys()],
    async save() {
      if (file === undefined) return;
      const out: Record<string, StoredMeta> = {};
      for (const [id, m] of [...meta].sort(([a], [b]) => (a < b ? -1 : 1))) out[id] = m;
      await writeFileAtomic(file, `${JSON.stringify(out, null, 2)}\n`);
    },
  };
}

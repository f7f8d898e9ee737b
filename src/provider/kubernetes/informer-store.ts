// What an informer keeps of one collection: each object's converted value, kept (with its identity) while the
// object's fingerprint is unchanged, a version that counts the real changes, and which objects those changed (so
// a reader can update what it built from the store by the change, not by walking every object again).
import type { JsonObject } from './api-client.js';

export interface InformerItem<T> {
  raw: JsonObject;
  value: T;
}

/** How received objects become stored items, and who hears of a real change. */
export interface InformerStoreOptions<T> {
  apiVersion: string;
  kind: string;
  essentials?: (raw: JsonObject) => JsonObject;
  convert(raw: JsonObject): T | undefined;
  fingerprint(raw: JsonObject): string;
  onChange(): void;
  /** A watch event brought the object again with the same fingerprint (for kinds whose status is not in it: its status). */
  onSame?(key: string): void;
}

export interface InformerStore<T> {
  items(): ReadonlyMap<string, InformerItem<T>>;
  version(): number;
  /**
   * The keys of the objects that really changed after `version` (in order, a key once per change); undefined
   * when that is not known any more (too long ago, or everything was replaced since).
   */
  changedSince(version: number): readonly string[] | undefined;
  /** Replaces everything with a full list's items. */
  replace(items: readonly JsonObject[]): void;
  /** Applies one watch event's object: stored (ADDED, MODIFIED) or removed (DELETED). */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: JsonObject): void;
  /** Forgets every object: the collection is no longer served. */
  clear(): void;
}

interface Entry<T> extends InformerItem<T> {
  fingerprint: string;
}

export function metadataOf(raw: JsonObject): { namespace?: string; name?: string; resourceVersion?: string } {
  const m = raw.metadata;
  return typeof m === 'object' && m !== null ? (m as { namespace?: string; name?: string }) : {};
}

export function keyOf(raw: JsonObject): string {
  const m = metadataOf(raw);
  return m.namespace === undefined ? (m.name ?? '') : `${m.namespace}/${m.name ?? ''}`;
}

/** Changes remembered for changedSince; past it, half are forgotten (a reader that far behind reads everything). */
const CHANGE_LOG_LIMIT = 8192;

export function createInformerStore<T>(options: InformerStoreOptions<T>): InformerStore<T> {
  let entries = new Map<string, Entry<T>>();
  let version = 0;
  // log[i] is the key changed by version logFrom + i + 1.
  let log: string[] = [];
  let logFrom = 0;

  /** One object changed (`key`), or everything (undefined: a relist, a clear). */
  function changed(key?: string): void {
    version++;
    if (key === undefined) {
      log = [];
      logFrom = version;
    } else {
      log.push(key);
      if (log.length > CHANGE_LOG_LIMIT) {
        const drop = log.length - CHANGE_LOG_LIMIT / 2;
        log = log.slice(drop);
        logFrom += drop;
      }
    }
    options.onChange();
  }

  /** Stores one received object into `target`; true when the value consumers see changed. */
  function upsert(target: Map<string, Entry<T>>, received: JsonObject, previous?: Entry<T>): boolean {
    const raw = options.essentials === undefined ? received : options.essentials(received);
    const object = { apiVersion: options.apiVersion, kind: options.kind, ...raw };
    const key = keyOf(object);
    const fingerprint = options.fingerprint(object);
    if (previous !== undefined && previous.fingerprint === fingerprint) {
      // Same content: keep the value (identity) but remember the newest raw object (resourceVersion, status).
      target.set(key, { ...previous, raw: object });
      return false;
    }
    const value = options.convert(object);
    if (value === undefined) {
      target.delete(key);
      return previous !== undefined;
    }
    target.set(key, { raw: object, value, fingerprint });
    return true;
  }

  return {
    items: () => entries,
    version: () => version,
    changedSince: (since) => (since < logFrom || since > version ? undefined : log.slice(since - logFrom)),
    replace(items) {
      const next = new Map<string, Entry<T>>();
      let anyChanged = false;
      for (const raw of items) {
        if (upsert(next, raw, entries.get(keyOf(raw)))) anyChanged = true;
      }
      for (const key of entries.keys()) if (!next.has(key)) anyChanged = true;
      entries = next;
      if (anyChanged) changed();
    },
    apply(type, object) {
      const key = keyOf(object);
      const before = entries.get(key);
      const anyChanged = type === 'DELETED' ? entries.delete(key) : upsert(entries, object, before);
      if (anyChanged) changed(key);
      else if (type !== 'DELETED' && before !== undefined) options.onSame?.(key);
    },
    clear() {
      if (entries.size === 0) return;
      entries = new Map();
      changed();
    },
  };
}

// The object store: one global resourceVersion counter, objects by type, and a bounded event history.
import { clone, type KubeObject } from './object.js';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  type: EventType;
  /** `group/resource` */
  storageKey: string;
  resourceVersion: number;
  object: KubeObject;
  /** The object before a MODIFIED event, so a selector watch can tell when it stops matching. */
  previous?: KubeObject;
}

export interface Store {
  resourceVersion(): number;
  /** The oldest resourceVersion a watch may still resume from. */
  oldestResumable(): number;
  get(storageKey: string, namespace: string, name: string): KubeObject | undefined;
  list(storageKey: string, namespace?: string): KubeObject[];
  /** Stores the object with a fresh resourceVersion and returns the stored copy. */
  put(storageKey: string, object: KubeObject): KubeObject;
  remove(storageKey: string, namespace: string, name: string): KubeObject | undefined;
  /** Events after `resourceVersion` for one type, or undefined when the history no longer reaches back. */
  eventsSince(storageKey: string, resourceVersion: number): StoreEvent[] | undefined;
  subscribe(listener: (event: StoreEvent) => void): () => void;
  storageKeys(): string[];
}

function slot(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function createStore(historySize: number): Store {
  const objects = new Map<string, Map<string, KubeObject>>();
  const history: StoreEvent[] = [];
  const listeners = new Set<(event: StoreEvent) => void>();
  let counter = 1;
  let compacted = 1;

  function table(key: string): Map<string, KubeObject> {
    let t = objects.get(key);
    if (t === undefined) {
      t = new Map();
      objects.set(key, t);
    }
    return t;
  }

  function record(event: StoreEvent): void {
    history.push(event);
    while (history.length > historySize) {
      const dropped = history.shift();
      if (dropped !== undefined) compacted = dropped.resourceVersion;
    }
    for (const l of [...listeners]) l(clone(event));
  }

  return {
    resourceVersion: () => counter,
    oldestResumable: () => compacted,
    get: (key, ns, name) => {
      const o = objects.get(key)?.get(slot(ns, name));
      return o === undefined ? undefined : clone(o);
    },
    list: (key, ns) => {
      const all = [...(objects.get(key)?.values() ?? [])];
      const picked = ns === undefined ? all : all.filter((o) => (o.metadata.namespace ?? '') === ns);
      return picked
        .map((o) => clone(o))
        .sort((a, b) =>
          slot(a.metadata.namespace ?? '', a.metadata.name ?? '').localeCompare(
            slot(b.metadata.namespace ?? '', b.metadata.name ?? ''),
          ),
        );
    },
    put(key, object) {
      counter++;
      const stored = clone(object);
      stored.metadata.resourceVersion = String(counter);
      const t = table(key);
      const s = slot(stored.metadata.namespace ?? '', stored.metadata.name ?? '');
      const before = t.get(s);
      t.set(s, stored);
      const event: StoreEvent = {
        type: before === undefined ? 'ADDED' : 'MODIFIED',
        storageKey: key,
        resourceVersion: counter,
        object: clone(stored),
      };
      if (before !== undefined) event.previous = before;
      record(event);
      return clone(stored);
    },
    remove(key, ns, name) {
      const t = objects.get(key);
      const found = t?.get(slot(ns, name));
      if (t === undefined || found === undefined) return undefined;
      t.delete(slot(ns, name));
      counter++;
      found.metadata.resourceVersion = String(counter);
      record({ type: 'DELETED', storageKey: key, resourceVersion: counter, object: clone(found) });
      return clone(found);
    },
    eventsSince(key, rv) {
      if (rv < compacted) return undefined;
      return history.filter((e) => e.resourceVersion > rv && e.storageKey === key).map((e) => clone(e));
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    storageKeys: () => [...objects.keys()],
  };
}

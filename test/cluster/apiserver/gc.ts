// Garbage collection (background cascade through ownerReferences) and namespace termination.
import type { Lifecycle } from './lifecycle.js';
import type { KubeObject } from './object.js';
import { builtinType } from './resources.js';
import { ApiError } from './status.js';

const NAMESPACE_CLEANUP_DELAY_MS = 1000;
const NAMESPACES = builtinType('namespaces');

function ignoreNotFound(action: () => void): void {
  try {
    action();
  } catch (error) {
    if (!(error instanceof ApiError && error.code === 404)) throw error;
  }
}

export function installGarbageCollector(lifecycle: Lifecycle): () => void {
  const { store, registry } = lifecycle;
  let scheduled = false;
  let stopped = false;

  function liveUids(): Set<string> {
    const uids = new Set<string>();
    for (const key of store.storageKeys())
      for (const o of store.list(key)) if (o.metadata.uid) uids.add(o.metadata.uid);
    return uids;
  }

  function sweep(): void {
    scheduled = false;
    if (stopped) return;
    const uids = liveUids();
    for (const type of registry.all()) {
      if (registry.byStorageKey(type.storageKey) !== type) continue;
      for (const o of store.list(type.storageKey)) {
        const refs = o.metadata.ownerReferences ?? [];
        if (refs.length === 0 || o.metadata.deletionTimestamp !== undefined) continue;
        if (refs.some((r) => uids.has(r.uid))) continue;
        ignoreNotFound(() => lifecycle.delete(type, o.metadata.namespace ?? '', o.metadata.name ?? ''));
      }
    }
    const now = Date.now();
    for (const ns of store.list(NAMESPACES.storageKey)) {
      const since =
        ns.metadata.deletionTimestamp === undefined ? undefined : Date.parse(ns.metadata.deletionTimestamp);
      if (since === undefined) continue;
      // A real namespace controller takes a moment (discovery, listing) before it deletes content.
      if (now - since < NAMESPACE_CLEANUP_DELAY_MS) {
        setTimeout(schedule, NAMESPACE_CLEANUP_DELAY_MS).unref();
        continue;
      }
      terminate(ns);
    }
  }

  function terminate(ns: KubeObject): void {
    const name = ns.metadata.name ?? '';
    let remaining = 0;
    for (const type of registry.all()) {
      if (!type.namespaced || registry.byStorageKey(type.storageKey) !== type) continue;
      for (const o of store.list(type.storageKey, name)) {
        remaining++;
        if (o.metadata.deletionTimestamp === undefined) {
          ignoreNotFound(() => lifecycle.delete(type, name, o.metadata.name ?? ''));
        }
      }
    }
    if (ns.status === undefined || (ns.status as { phase?: string }).phase !== 'Terminating') {
      ns.status = { phase: 'Terminating' };
      store.put(NAMESPACES.storageKey, ns);
    }
    const left = registry
      .all()
      .filter((t) => t.namespaced && registry.byStorageKey(t.storageKey) === t)
      .reduce((n, t) => n + store.list(t.storageKey, name).length, 0);
    if (left === 0 || remaining === 0) lifecycle.forget(NAMESPACES, '', name);
  }

  function schedule(): void {
    if (scheduled || stopped) return;
    scheduled = true;
    setImmediate(sweep);
  }

  lifecycle.hooks.graceful.push((type) => type.storageKey === NAMESPACES.storageKey);
  const unsubscribe = store.subscribe((event) => {
    if (event.type === 'DELETED') schedule();
    else if (
      event.storageKey === NAMESPACES.storageKey &&
      event.object.metadata.deletionTimestamp !== undefined
    ) {
      schedule();
    }
  });
  return () => {
    stopped = true;
    unsubscribe();
  };
}

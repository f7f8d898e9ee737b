// The resource snapshot read from the watch's informers: the objects in the selected namespaces, each kind's
// array (and the unusable objects' array) reused while nothing in it changed, since the translator keys on them.
import type { LabelSelector } from '../../api/common.js';
import type { ApiObject } from '../../api/kinds.js';
import { emptySnapshot, type ResourceSnapshot, type UnusableObject } from '../../api/snapshot.js';
import { selectorMatches } from '../../translate/label-selector.js';
import type { Informer } from './informer.js';
import { WATCHED_KINDS, type WatchedKind } from './watched-kinds.js';

/** What the watch keeps of an object: the object, or why it cannot be used. */
export type Received = { object: ApiObject } | { unusable: UnusableObject };

const SNAPSHOT_FIELDS: Record<string, keyof ResourceSnapshot> = {
  GatewayClass: 'gatewayClasses',
  Gateway: 'gateways',
  HTTPRoute: 'httpRoutes',
  GRPCRoute: 'grpcRoutes',
  ReferenceGrant: 'referenceGrants',
  Service: 'services',
  EndpointSlice: 'endpointSlices',
  Namespace: 'namespaces',
  Secret: 'secrets',
  DataPlaneProxy: 'dataPlaneProxies',
};

/** The namespaces whose labels match `selector`, plus the controller's own. */
function selectedNamespaces(
  selector: LabelSelector,
  controllerNamespace: string,
  namespaces: readonly Informer<Received>[],
): Set<string> {
  const selected = new Set([controllerNamespace]);
  for (const informer of namespaces) {
    for (const [name, item] of informer.items()) {
      if (!('object' in item.value)) continue;
      const labels = (item.value.object.metadata.labels ?? {}) as Record<string, string>;
      if (selectorMatches(selector, labels)) selected.add(name);
    }
  }
  return selected;
}

/**
 * Reads snapshots from the informers of each kind. `selector`: only namespaces whose labels match it (and the
 * controller's) are seen; absent, every namespace the informers watch.
 */
export function createInformerSnapshot(
  byKind: ReadonlyMap<string, Informer<Received>[]>,
  selector: LabelSelector | undefined,
  controllerNamespace: string,
): () => ResourceSnapshot {
  const cache = new Map<string, { key: string; objects: ApiObject[] }>();
  /** The kind's objects in the selected namespaces; the same array while none of them changed. */
  function objectsOf(kind: WatchedKind, selected: Set<string> | undefined, selectedKey: string): ApiObject[] {
    const informers = byKind.get(kind.kind) ?? [];
    const key = `${informers.map((i) => i.version()).join(',')}|${kind.namespaced ? selectedKey : ''}`;
    const hit = cache.get(kind.kind);
    if (hit?.key === key) return hit.objects;
    const objects: ApiObject[] = [];
    for (const informer of informers) {
      for (const item of informer.items().values()) {
        if (!('object' in item.value)) continue;
        const ns = item.value.object.metadata.namespace;
        if (kind.namespaced && selected !== undefined && (ns === undefined || !selected.has(ns))) continue;
        objects.push(item.value.object);
      }
    }
    cache.set(kind.kind, { key, objects });
    return objects;
  }

  let unusableCache: { key: string; unusable: UnusableObject[] } | undefined;
  /** Every kind's unusable objects in the selected namespaces; the same array while they are the same. */
  function unusableOf(selected: Set<string> | undefined, selectedKey: string): UnusableObject[] {
    const informers = [...byKind.values()].flat();
    const key = `${informers.map((i) => i.version()).join(',')}|${selectedKey}`;
    if (unusableCache?.key === key) return unusableCache.unusable;
    const unusable: UnusableObject[] = [];
    for (const informer of informers) {
      for (const item of informer.items().values()) {
        if (!('unusable' in item.value)) continue;
        const ns = item.value.unusable.namespace;
        if (ns !== undefined && selected !== undefined && !selected.has(ns)) continue;
        unusable.push(item.value.unusable);
      }
    }
    // A change elsewhere (a route edit) keeps the array: the translator rebuilds its lookup when it changes.
    const previous = unusableCache?.unusable;
    const same = previous?.length === unusable.length && unusable.every((u, i) => u === previous[i]);
    unusableCache = { key, unusable: same ? previous : unusable };
    return unusableCache.unusable;
  }

  return () => {
    const selected =
      selector === undefined
        ? undefined
        : selectedNamespaces(selector, controllerNamespace, byKind.get('Namespace') ?? []);
    const selectedKey = selected === undefined ? '*' : [...selected].sort().join(',');
    const snapshot = emptySnapshot();
    for (const kind of WATCHED_KINDS) {
      // Each kind's array keeps its identity while unchanged: the translator's lookup cache keys on it.
      const field = SNAPSHOT_FIELDS[kind.kind]!;
      (snapshot as unknown as Record<string, ApiObject[]>)[field] = objectsOf(kind, selected, selectedKey);
    }
    snapshot.unusable = unusableOf(selected, selectedKey);
    return snapshot;
  };
}

// The resource snapshot read from the watch's informers: the objects in the selected namespaces, each kind's
// array reused while nothing in it changed (the translator keys on it), and otherwise updated by the objects the
// informers say changed, not rebuilt from all of them: an edit among thousands costs what it touched.
import type { LabelSelector } from '../../api/common.js';
import type { ApiObject } from '../../api/kinds.js';
import { selectorMatches } from '../../api/label-selector.js';
import {
  emptySnapshot,
  type ListChange,
  type ResourceSnapshot,
  type UnusableObject,
} from '../../api/snapshot.js';
import type { Informer } from './informer.js';
import { WATCHED_KINDS } from './watched-kinds.js';

/** What the watch keeps of an object: the object, or why it cannot be used. */
export type Received = { object: ApiObject } | { unusable: UnusableObject };

const SNAPSHOT_FIELDS: Record<string, keyof ResourceSnapshot> = {
  GatewayClass: 'gatewayClasses',
  Gateway: 'gateways',
  ListenerSet: 'listenerSets',
  HTTPRoute: 'httpRoutes',
  GRPCRoute: 'grpcRoutes',
  TLSRoute: 'tlsRoutes',
  TCPRoute: 'tcpRoutes',
  UDPRoute: 'udpRoutes',
  ReferenceGrant: 'referenceGrants',
  Service: 'services',
  EndpointSlice: 'endpointSlices',
  Namespace: 'namespaces',
  Secret: 'secrets',
  ConfigMap: 'configMaps',
  ClusterTrustBundle: 'clusterTrustBundles',
  BackendTLSPolicy: 'backendTlsPolicies',
  DataPlaneProxy: 'dataPlaneProxies',
  AccessPolicy: 'accessPolicies',
  ClientTrafficPolicy: 'clientTrafficPolicies',
  RateLimitPolicy: 'rateLimitPolicies',
};

/** Steps of a route list kept for the translator: it needs the ones since the list it last translated. */
const ROUTE_STEPS = 8;

/** One kind's objects as last read, and where each sits in the array (by informer key). */
interface KindList {
  objects: ApiObject[];
  positions: Map<string, number>;
  /** Keys of this kind's unusable objects (rare: any change touching one rebuilds the unusable list). */
  unusableKeys: Set<string>;
  /** Each informer's version when read. */
  versions: number[];
  selectedKey: string;
  /** Route kinds: how `objects` came to be, oldest step first. */
  steps: ListChange<ApiObject>[];
}

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

const keyOfObject = (o: ApiObject): string =>
  o.metadata.namespace === undefined ? o.metadata.name : `${o.metadata.namespace}/${o.metadata.name}`;

const ROUTE_KINDS = new Set(['HTTPRoute', 'GRPCRoute']);

/** Reads a kind's objects from its informers, in the selected namespaces. */
interface KindReader {
  informers: readonly Informer<Received>[];
  namespaced: boolean;
  selected: Set<string> | undefined;
  /** Keep the list's last steps: only routes are translated by their changes, other kinds' would hold old arrays. */
  keepsSteps: boolean;
}

function visible(reader: KindReader, namespace: string | undefined): boolean {
  return (
    !reader.namespaced ||
    reader.selected === undefined ||
    (namespace !== undefined && reader.selected.has(namespace))
  );
}

/** The item at `key` as the snapshot shows it: its object, `unusable`, or nothing. */
function shown(reader: KindReader, key: string): ApiObject | 'unusable' | undefined {
  for (const informer of reader.informers) {
    const item = informer.items().get(key);
    if (item === undefined) continue;
    if ('object' in item.value)
      return visible(reader, item.value.object.metadata.namespace) ? item.value.object : undefined;
    return visible(reader, item.value.unusable.namespace) ? 'unusable' : undefined;
  }
  return undefined;
}

function fullList(reader: KindReader, selectedKey: string): KindList {
  const objects: ApiObject[] = [];
  const positions = new Map<string, number>();
  const unusableKeys = new Set<string>();
  for (const informer of reader.informers) {
    for (const [key, item] of informer.items()) {
      // Two informers of a kind may both hold an object (a labelled watch beside the kind's own): the first wins.
      if (positions.has(key) || unusableKeys.has(key)) continue;
      if ('object' in item.value) {
        if (!visible(reader, item.value.object.metadata.namespace)) continue;
        positions.set(key, objects.length);
        objects.push(item.value.object);
      } else if (visible(reader, item.value.unusable.namespace)) unusableKeys.add(key);
    }
  }
  const versions = reader.informers.map((i) => i.version());
  return { objects, positions, unusableKeys, versions, selectedKey, steps: [] };
}

/** The keys changed since `list` was read, or undefined when some informer cannot say. */
function changedKeys(reader: KindReader, list: KindList): Set<string> | undefined {
  const keys = new Set<string>();
  for (const [i, informer] of reader.informers.entries()) {
    const changed = informer.changedSince(list.versions[i] ?? -1);
    if (changed === undefined) return undefined;
    for (const key of changed) keys.add(key);
  }
  return keys;
}

/**
 * `list` updated by the changed keys: an object replaced in its place, a new one at the end, a removed one's
 * place taken by the last (the translator orders every list itself). Also says whether unusable objects changed.
 */
function updatedList(
  reader: KindReader,
  list: KindList,
  keys: Set<string>,
): { list: KindList; unusable: boolean } {
  const objects = list.objects.slice();
  const { positions, unusableKeys } = list;
  const removed: ApiObject[] = [];
  const added: ApiObject[] = [];
  let unusable = false;
  for (const key of keys) {
    const now = shown(reader, key);
    if (now === 'unusable' || unusableKeys.has(key)) {
      unusable = true;
      if (now === 'unusable') unusableKeys.add(key);
      else unusableKeys.delete(key);
    }
    const at = positions.get(key);
    const before = at === undefined ? undefined : objects[at];
    const next = now === 'unusable' ? undefined : now;
    if (before === next) continue;
    if (before !== undefined) removed.push(before);
    if (next !== undefined) added.push(next);
    if (next !== undefined && at !== undefined) objects[at] = next;
    else if (next !== undefined) {
      positions.set(key, objects.length);
      objects.push(next);
    } else if (at !== undefined) {
      const last = objects.pop()!;
      positions.delete(key);
      if (at < objects.length) {
        objects[at] = last;
        positions.set(keyOfObject(last), at);
      }
    }
  }
  const steps = reader.keepsSteps
    ? [...list.steps, { from: list.objects, to: objects, removed, added }].slice(-ROUTE_STEPS)
    : list.steps;
  const versions = reader.informers.map((i) => i.version());
  return { list: { ...list, objects, versions, steps }, unusable };
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
  const lists = new Map<string, KindList>();
  let unusable: UnusableObject[] = [];

  /** The kind's list now; `unusable` true when its unusable objects changed (or it was read afresh). */
  function listOf(
    reader: KindReader,
    kind: string,
    selectedKey: string,
  ): { list: KindList; unusable: boolean } {
    const hit = lists.get(kind);
    if (hit !== undefined && hit.selectedKey === selectedKey) {
      if (reader.informers.every((informer, i) => informer.version() === hit.versions[i])) {
        return { list: hit, unusable: false };
      }
      const keys = changedKeys(reader, hit);
      if (keys !== undefined) return updatedList(reader, hit, keys);
    }
    return { list: fullList(reader, selectedKey), unusable: true };
  }

  return () => {
    const selected =
      selector === undefined
        ? undefined
        : selectedNamespaces(selector, controllerNamespace, byKind.get('Namespace') ?? []);
    const selectedKey = selected === undefined ? '*' : [...selected].sort().join(',');
    const snapshot = emptySnapshot();
    let unusableChanged = false;
    for (const kind of WATCHED_KINDS) {
      const reader = {
        informers: byKind.get(kind.kind) ?? [],
        namespaced: kind.namespaced,
        selected,
        keepsSteps: ROUTE_KINDS.has(kind.kind),
      };
      const { list, unusable: changed } = listOf(reader, kind.kind, kind.namespaced ? selectedKey : '*');
      lists.set(kind.kind, list);
      if (changed) unusableChanged = true;
      // Each kind's array keeps its identity while unchanged: the translator's lookup cache keys on it.
      (snapshot as unknown as Record<string, ApiObject[]>)[SNAPSHOT_FIELDS[kind.kind]!] = list.objects;
    }
    if (unusableChanged) unusable = unusableObjects(byKind, selected, unusable);
    snapshot.unusable = unusable;
    snapshot.routeChanges = {
      httpRoutes: (lists.get('HTTPRoute')?.steps ?? []) as ListChange<never>[],
      grpcRoutes: (lists.get('GRPCRoute')?.steps ?? []) as ListChange<never>[],
    };
    return snapshot;
  };
}

/** Every kind's unusable objects in the selected namespaces; `previous` (same array) when they are the same. */
function unusableObjects(
  byKind: ReadonlyMap<string, Informer<Received>[]>,
  selected: Set<string> | undefined,
  previous: UnusableObject[],
): UnusableObject[] {
  const found: UnusableObject[] = [];
  for (const informer of [...byKind.values()].flat()) {
    for (const item of informer.items().values()) {
      if (!('unusable' in item.value)) continue;
      const ns = item.value.unusable.namespace;
      if (ns !== undefined && selected !== undefined && !selected.has(ns)) continue;
      found.push(item.value.unusable);
    }
  }
  // The translator rebuilds its lookup when this array changes: keep it when its objects are the same.
  const same = previous.length === found.length && found.every((u, i) => u === previous[i]);
  return same ? previous : found;
}

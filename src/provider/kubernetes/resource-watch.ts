// Informers for every watched kind in the configured scope (all namespaces, a list, or a label selector) and
// the snapshot built from them, reusing each kind's array while nothing of that kind changed.
import { formatResourceError, type ResourceError } from '../../api/common.js';
import type { PorticoGatewayConfig } from '../../api/controller-config.js';
import { type ApiObject, objectId } from '../../api/kinds.js';
import { emptySnapshot, type ResourceSnapshot, type UnusableObject } from '../../api/snapshot.js';
import { SERVED_BY_API_SERVER, validateObject } from '../../api/validate.js';
import { selectorMatches } from '../../translate/label-selector.js';
import type { ApiClient, JsonObject } from './api-client.js';
import { createInformer, type Informer } from './informer.js';
import { collectionPath, fingerprint, WATCHED_KINDS, type WatchedKind } from './watched-kinds.js';

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

/** What the watch keeps of an object: the object, or why it cannot be used. */
type Received = { object: ApiObject } | { unusable: UnusableObject };

function unusableObject(kind: WatchedKind, raw: JsonObject, errors: ResourceError[]): UnusableObject {
  const meta = (raw.metadata ?? {}) as { name?: unknown; namespace?: unknown };
  // The errors name the object already; the reason lists only fields and messages.
  const reason = errors.map((e) => formatResourceError({ ...e, object: undefined })).join('; ');
  const name = String(meta.name ?? '');
  return kind.namespaced
    ? { kind: kind.kind, namespace: String(meta.namespace ?? ''), name, reason }
    : { kind: kind.kind, name, reason };
}

export interface ResourceWatchOptions {
  client: ApiClient;
  config: PorticoGatewayConfig;
  controllerNamespace: string;
  onChange(): void;
  log(line: string): void;
}

export interface ResourceWatch {
  start(): Promise<void>;
  stop(): void;
  snapshot(): ResourceSnapshot;
  /** The raw object as last seen, e.g. for its current status and resourceVersion. */
  raw(kind: string, key: string): JsonObject | undefined;
}

export function createResourceWatch(options: ResourceWatchOptions): ResourceWatch {
  const watch = options.config.provider.kubernetes.watch;
  // Namespaces mode watches only the listed namespaces (plus our own); otherwise collections are cluster-wide.
  const namespaceList =
    watch?.type === 'Namespaces'
      ? [...new Set([...(watch.namespaces ?? []), options.controllerNamespace])]
      : undefined;
  const selector = watch?.type === 'NamespaceSelector' ? watch.namespaceSelector : undefined;

  function informerFor(kind: WatchedKind, namespace?: string): Informer<Received> {
    return createInformer<Received>({
      client: options.client,
      path: collectionPath(kind.apiVersion, kind.resource, namespace),
      apiVersion: kind.apiVersion,
      kind: kind.kind,
      fingerprint: (raw) => fingerprint(kind, raw),
      ...(kind.fieldSelector === undefined
        ? {}
        : { query: `fieldSelector=${encodeURIComponent(kind.fieldSelector)}` }),
      ...(kind.essentials === undefined ? {} : { essentials: kind.essentials }),
      convert(raw) {
        // The API server already validated by its own schema: fields ours does not declare are no error here,
        // and the null it serves for an empty list or map reads as empty.
        const result = validateObject(raw, undefined, SERVED_BY_API_SERVER);
        if (result.ok) return { object: result.object };
        // Converted once per change of the object: one line each time it changes and is still unusable.
        const unusable = unusableObject(kind, raw, result.errors);
        options.log(
          `ignoring invalid object ${objectId(unusable.kind, unusable.name, unusable.namespace)}: ${unusable.reason}`,
        );
        return { unusable };
      },
      onChange: options.onChange,
      log: options.log,
      mayBeAbsent: kind.mayBeAbsent === true,
    });
  }

  const byKind = new Map<string, Informer<Received>[]>();
  for (const kind of WATCHED_KINDS) {
    const list =
      kind.namespaced && namespaceList !== undefined
        ? namespaceList.map((ns) => informerFor(kind, ns))
        : [informerFor(kind)];
    byKind.set(kind.kind, list);
  }

  function selectedNamespaces(): Set<string> | undefined {
    if (selector === undefined) return undefined;
    const selected = new Set([options.controllerNamespace]);
    for (const informer of byKind.get('Namespace') ?? []) {
      for (const [name, item] of informer.items()) {
        if (!('object' in item.value)) continue;
        const labels = (item.value.object.metadata.labels ?? {}) as Record<string, string>;
        if (selectorMatches(selector, labels)) selected.add(name);
      }
    }
    return selected;
  }

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

  return {
    async start() {
      await Promise.all([...byKind.values()].flat().map((i) => i.start()));
    },
    stop() {
      for (const i of [...byKind.values()].flat()) i.stop();
    },
    snapshot() {
      const selected = selectedNamespaces();
      const selectedKey = selected === undefined ? '*' : [...selected].sort().join(',');
      const snapshot = emptySnapshot();
      for (const kind of WATCHED_KINDS) {
        // Each kind's array keeps its identity while unchanged: the translator's lookup cache keys on it.
        const field = SNAPSHOT_FIELDS[kind.kind]!;
        (snapshot as unknown as Record<string, ApiObject[]>)[field] = objectsOf(kind, selected, selectedKey);
      }
      snapshot.unusable = unusableOf(selected, selectedKey);
      return snapshot;
    },
    raw(kind, key) {
      for (const informer of byKind.get(kind) ?? []) {
        const item = informer.items().get(key);
        if (item !== undefined) return item.raw;
      }
      return undefined;
    },
  };
}

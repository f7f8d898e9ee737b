// Informers for every watched kind in the configured scope (all namespaces, a list, or a label selector), and
// the snapshot read from them (informer-snapshot.ts).
import { formatResourceError, type ResourceError } from '../../api/common.js';
import type { PorticoGatewayConfig } from '../../api/controller-config.js';
import { objectId } from '../../api/kinds.js';
import type { ResourceSnapshot, UnusableObject } from '../../api/snapshot.js';
import { SERVED_BY_API_SERVER, validateObject } from '../../api/validate.js';
import type { Logger } from '../../platform/log-line.js';
import type { ApiClient, JsonObject } from './api-client.js';
import { createInformer, type Informer } from './informer.js';
import { createInformerSnapshot, type Received } from './informer-snapshot.js';
import { collectionPath, fingerprint, WATCHED_KINDS, type WatchedKind } from './watched-kinds.js';

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
  /** Only the status of an object whose status is an output (a Gateway, a route…) changed: `key` is `ns/name`. */
  onStatusChange?(kind: string, key: string): void;
  log: Logger;
}

export interface ResourceWatch {
  start(): Promise<void>;
  stop(): void;
  snapshot(): ResourceSnapshot;
  /** The raw object as last seen, e.g. for its current status and resourceVersion. */
  raw(kind: string, key: string): JsonObject | undefined;
}

/** The object, or why it cannot be used, logged once per change of an object that stays unusable. */
function receivedObject(kind: WatchedKind, raw: JsonObject, log: Logger): Received {
  // The API server already validated by its own schema: fields ours does not declare are no error here,
  // and the null it serves for an empty list or map reads as empty.
  const result = validateObject(raw, undefined, SERVED_BY_API_SERVER);
  if (result.ok) return { object: result.object };
  const unusable = unusableObject(kind, raw, result.errors);
  log.warn(
    `ignoring invalid object ${objectId(unusable.kind, unusable.name, unusable.namespace)}: ${unusable.reason}`,
  );
  return { unusable };
}

/** The list and watch queries of a kind: its labelled one first (its objects win), then its own. */
function queriesOf(kind: WatchedKind): { query?: string; essentials?: (raw: JsonObject) => JsonObject }[] {
  const own = {
    ...(kind.fieldSelector === undefined
      ? {}
      : { query: `fieldSelector=${encodeURIComponent(kind.fieldSelector)}` }),
    ...(kind.essentials === undefined ? {} : { essentials: kind.essentials }),
  };
  const labelled = kind.labelledWatch;
  if (labelled === undefined) return [own];
  return [
    {
      query: `labelSelector=${encodeURIComponent(labelled.labelSelector)}`,
      essentials: labelled.essentials,
    },
    own,
  ];
}

function informerFor(
  options: ResourceWatchOptions,
  kind: WatchedKind,
  query: { query?: string; essentials?: (raw: JsonObject) => JsonObject },
  namespace?: string,
): Informer<Received> {
  return createInformer<Received>({
    client: options.client,
    path: collectionPath(kind.apiVersion, kind.resource, namespace),
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    fingerprint: (raw) => fingerprint(kind, raw),
    ...query,
    // Converted once per change of the object, so an unusable one is logged each time it changes.
    convert: (raw) => receivedObject(kind, raw, options.log),
    onChange: options.onChange,
    ...(kind.statusIsOutput && options.onStatusChange !== undefined
      ? { onSame: (key: string) => options.onStatusChange?.(kind.kind, key) }
      : {}),
    log: options.log,
    mayBeAbsent: kind.mayBeAbsent === true,
  });
}

export function createResourceWatch(options: ResourceWatchOptions): ResourceWatch {
  const watch = options.config.provider.kubernetes.watch;
  // Namespaces mode watches only the listed namespaces (plus our own); otherwise collections are cluster-wide.
  const namespaceList =
    watch?.type === 'Namespaces'
      ? [...new Set([...(watch.namespaces ?? []), options.controllerNamespace])]
      : undefined;
  const selector = watch?.type === 'NamespaceSelector' ? watch.namespaceSelector : undefined;

  const byKind = new Map<string, Informer<Received>[]>();
  for (const kind of WATCHED_KINDS) {
    const list = queriesOf(kind).flatMap((query) =>
      kind.namespaced && namespaceList !== undefined
        ? namespaceList.map((ns) => informerFor(options, kind, query, ns))
        : [informerFor(options, kind, query)],
    );
    byKind.set(kind.kind, list);
  }

  return {
    async start() {
      await Promise.all([...byKind.values()].flat().map((i) => i.start()));
    },
    stop() {
      for (const i of [...byKind.values()].flat()) i.stop();
    },
    snapshot: createInformerSnapshot(byKind, selector, options.controllerNamespace),
    raw(kind, key) {
      for (const informer of byKind.get(kind) ?? []) {
        const item = informer.items().get(key);
        if (item !== undefined) return item.raw;
      }
      return undefined;
    },
  };
}

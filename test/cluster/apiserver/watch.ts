// Watch: chunked JSON lines of ADDED/MODIFIED/DELETED/BOOKMARK events, resumable from a resourceVersion.
import type { ServerResponse } from 'node:http';
import type { JsonObject, KubeObject } from './object.js';
import type { RequestInfo } from './request-info.js';
import { apiVersionOf } from './resources.js';
import { selectorPredicate } from './selectors.js';
import { gone, statusBody } from './status.js';
import type { Store, StoreEvent } from './store.js';

export interface WatchOptions {
  bookmarkIntervalMs: number;
  /** How an object is shown in events (a Table row for `kubectl get -w`). */
  present: (object: KubeObject) => JsonObject;
}

type WireEvent = { type: string; object: unknown };

export function serveWatch(
  store: Store,
  info: RequestInfo,
  query: URLSearchParams,
  res: ServerResponse,
  options: WatchOptions,
): void {
  const { type, namespace } = info;
  const matches = selectorPredicate(query.get('labelSelector'), query.get('fieldSelector'));
  const inScope = (o: KubeObject) =>
    !type.namespaced || namespace === '' || o.metadata.namespace === namespace;
  const selected = (o: KubeObject | undefined) => o !== undefined && inScope(o) && matches(o);
  const typed = (o: KubeObject) => options.present({ ...o, apiVersion: apiVersionOf(type), kind: type.kind });

  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache' });
  res.flushHeaders();
  const send = (e: WireEvent) => {
    if (!res.writableEnded) res.write(`${JSON.stringify(e)}\n`);
  };

  function translate(e: StoreEvent): WireEvent | undefined {
    const now = selected(e.object);
    if (e.type !== 'MODIFIED') return now ? { type: e.type, object: typed(e.object) } : undefined;
    const before = selected(e.previous);
    if (now && before) return { type: 'MODIFIED', object: typed(e.object) };
    if (now) return { type: 'ADDED', object: typed(e.object) };
    if (before) return { type: 'DELETED', object: typed(e.object) };
    return undefined;
  }

  const pending: StoreEvent[] = [];
  let live = false;
  let lastSent = 0;
  const unsubscribe = store.subscribe((e) => {
    if (e.storageKey !== type.storageKey) return;
    if (!live) {
      pending.push(e);
      return;
    }
    if (e.resourceVersion <= lastSent) return;
    lastSent = e.resourceVersion;
    const wire = translate(e);
    if (wire !== undefined) send(wire);
  });

  const rvParam = query.get('resourceVersion') ?? '';
  if (rvParam === '' || rvParam === '0') {
    lastSent = store.resourceVersion();
    for (const o of store.list(type.storageKey)) if (selected(o)) send({ type: 'ADDED', object: typed(o) });
  } else {
    const from = Number(rvParam);
    const history = Number.isInteger(from) ? store.eventsSince(type.storageKey, from) : undefined;
    if (history === undefined) {
      const error = gone(`too old resource version: ${rvParam} (${store.oldestResumable()})`);
      // As a real API server: HTTP 200, one ERROR event carrying the 410 Status, then the stream ends.
      // The short pause lets clients (client-node) handle the event before they see the stream close.
      send({ type: 'ERROR', object: statusBody(error) });
      unsubscribe();
      setTimeout(() => res.end(), 50);
      return;
    }
    lastSent = from;
    for (const e of history) {
      lastSent = e.resourceVersion;
      const wire = translate(e);
      if (wire !== undefined) send(wire);
    }
  }
  live = true;
  for (const e of pending) {
    if (e.resourceVersion <= lastSent) continue;
    lastSent = e.resourceVersion;
    const wire = translate(e);
    if (wire !== undefined) send(wire);
  }

  const timers: NodeJS.Timeout[] = [];
  if (query.get('allowWatchBookmarks') === 'true') {
    timers.push(
      setInterval(() => {
        const rv = String(Math.max(lastSent, store.resourceVersion()));
        send({
          type: 'BOOKMARK',
          object: { kind: type.kind, apiVersion: apiVersionOf(type), metadata: { resourceVersion: rv } },
        });
      }, options.bookmarkIntervalMs),
    );
  }
  const timeout = Number(query.get('timeoutSeconds') ?? '0');
  if (timeout > 0) timers.push(setTimeout(() => res.end(), timeout * 1000));
  const finish = () => {
    unsubscribe();
    for (const t of timers) clearTimeout(t);
  };
  res.on('close', finish);
  res.on('finish', finish);
}

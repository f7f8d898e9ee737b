// List + watch of one collection: resumes a dropped watch from its last resourceVersion, relists on 410 Gone.
// What it keeps of the objects (converted values, kept while an object has not really changed): informer-store.ts.
import { PorticoError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log-line.js';
import type { ApiClient, JsonObject, WatchEvent } from './api-client.js';
import { createInformerStore, type InformerItem, metadataOf } from './informer-store.js';

export type { InformerItem } from './informer-store.js';

export interface InformerOptions<T> {
  client: ApiClient;
  /** Collection path, e.g. `/apis/gateway.networking.k8s.io/v1/namespaces/a/gateways`. */
  path: string;
  apiVersion: string;
  kind: string;
  /** Query parameters for the list and the watch (e.g. `fieldSelector=...`), already encoded. */
  query?: string;
  /** What is kept of each raw object, before it is stored, compared or converted. */
  essentials?: (raw: JsonObject) => JsonObject;
  /** Raw object → the value consumers see; undefined drops the object (e.g. invalid). */
  convert(raw: JsonObject): T | undefined;
  /** The parts of an object that matter: events that leave it unchanged are ignored. */
  fingerprint(raw: JsonObject): string;
  onChange(): void;
  /** A watch event brought an object whose fingerprint did not change. */
  onSame?(key: string): void;
  log: Logger;
  /** Wait before relisting after an error; default 1000 ms. */
  retryMs?: number;
  /**
   * The collection may not be served (its CRD is not installed): a 404 then reads as no objects, and the list
   * is tried again every `absentRetryMs` (default 30 s) until it is served.
   */
  mayBeAbsent?: boolean;
  absentRetryMs?: number;
}

export interface Informer<T> {
  /** Resolves once the first list is in. */
  start(): Promise<void>;
  stop(): void;
  items(): ReadonlyMap<string, InformerItem<T>>;
  /** Increments on every real change: a cheap "did anything change" for snapshot reuse. */
  version(): number;
  /** The keys of the objects changed after `version`; undefined when not known (see InformerStore). */
  changedSince(version: number): readonly string[] | undefined;
}

/** Watches `path` until the stream ends; true when an ERROR event (410 Gone, say) calls for a new list. */
async function watchUntilEnd(
  client: ApiClient,
  path: string,
  onEvent: (event: WatchEvent) => void,
  started: (handle: { stop(): void }) => void,
): Promise<boolean> {
  let relist = false;
  const handle = client.watch(path, (event) => {
    if (event.type === 'ERROR') {
      relist = true;
      handle.stop();
      return;
    }
    onEvent(event);
  });
  started(handle);
  await handle.done;
  return relist;
}

/** Calls `attempt` until it answers, every `retryMs` after a failure; undefined when stopped meanwhile. */
async function retryUntilAnswered<R>(
  attempt: () => Promise<R>,
  retryMs: number,
  stopped: () => boolean,
  failed: (error: Error) => void,
): Promise<R | undefined> {
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      failed(error as Error);
      await new Promise((resolve) => setTimeout(resolve, retryMs));
      if (stopped()) return undefined;
    }
  }
}

export function createInformer<T>(options: InformerOptions<T>): Informer<T> {
  const retryMs = options.retryMs ?? 1000;
  const absentRetryMs = options.absentRetryMs ?? 30_000;
  const store = createInformerStore(options);
  let stopped = false;
  let resourceVersion = '';
  let current: { stop(): void } | undefined;
  let timer: NodeJS.Timeout | undefined;

  const listPath = options.query === undefined ? options.path : `${options.path}?${options.query}`;
  const watchQuery = options.query === undefined ? '' : `${options.query}&`;

  function pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
  }

  /** 'absent': the collection is not served (and may not be); its objects, if any were, are gone. */
  async function list(): Promise<'listed' | 'absent'> {
    const reply = await options.client.request('GET', listPath);
    if (reply.status === 404 && options.mayBeAbsent === true) {
      store.clear();
      return 'absent';
    }
    if (reply.status !== 200) {
      throw new PorticoError('E_KUBERNETES', `list ${options.path}: HTTP ${reply.status}`);
    }
    store.replace(Array.isArray(reply.body.items) ? (reply.body.items as JsonObject[]) : []);
    resourceVersion = String(metadataOf(reply.body).resourceVersion ?? '');
    return 'listed';
  }

  /** Lists until the collection is served, then returns; logs when it is absent and when it appears. */
  async function awaitServed(): Promise<void> {
    options.log.warn(
      `${options.path} is not served (is its CRD installed?); listing again every ${absentRetryMs} ms`,
    );
    while (!stopped) {
      await pause(absentRetryMs);
      if (stopped || (await list()) === 'listed') break;
    }
    if (!stopped) options.log.info(`${options.path} is served now`);
  }

  function onEvent(event: WatchEvent): void {
    const meta = metadataOf(event.object);
    if (meta.resourceVersion !== undefined) resourceVersion = meta.resourceVersion;
    if (event.type !== 'BOOKMARK' && event.type !== 'ERROR') store.apply(event.type, event.object);
  }

  async function loop(absent: boolean): Promise<void> {
    let needList = false;
    if (absent) await awaitServed();
    while (!stopped) {
      try {
        if (needList && (await list()) === 'absent') await awaitServed();
        const path = `${options.path}?${watchQuery}watch=1&allowWatchBookmarks=true&resourceVersion=${resourceVersion}`;
        needList = await watchUntilEnd(options.client, path, onEvent, (handle) => {
          current = handle;
        });
      } catch (error) {
        if (stopped) return;
        options.log.warn(`watch ${options.path}: ${(error as Error).message}; relisting`);
        needList = true;
        await pause(retryMs);
      }
    }
  }

  return {
    async start() {
      const failed = (error: Error) => options.log.warn(`list ${options.path}: ${error.message}; retrying`);
      const listed = await retryUntilAnswered(list, retryMs, () => stopped, failed);
      if (listed !== undefined) void loop(listed === 'absent');
    },
    stop() {
      stopped = true;
      current?.stop();
      if (timer !== undefined) clearTimeout(timer);
    },
    items: store.items,
    version: store.version,
    changedSince: store.changedSince,
  };
}

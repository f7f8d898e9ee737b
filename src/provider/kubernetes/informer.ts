// List + watch of one collection: resumes a dropped watch from its last resourceVersion, relists on 410 Gone,
// and keeps each item's converted value (and its identity) while the object has not really changed.
import type { ApiClient, JsonObject, WatchEvent } from './api-client.js';

export interface InformerItem<T> {
  raw: JsonObject;
  value: T;
}

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
  log(line: string): void;
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
}

interface Entry<T> extends InformerItem<T> {
  fingerprint: string;
}

function metadataOf(raw: JsonObject): { namespace?: string; name?: string; resourceVersion?: string } {
  const m = raw.metadata;
  return typeof m === 'object' && m !== null ? (m as { namespace?: string; name?: string }) : {};
}

export function keyOf(raw: JsonObject): string {
  const m = metadataOf(raw);
  return m.namespace === undefined ? (m.name ?? '') : `${m.namespace}/${m.name ?? ''}`;
}

export function createInformer<T>(options: InformerOptions<T>): Informer<T> {
  const retryMs = options.retryMs ?? 1000;
  const absentRetryMs = options.absentRetryMs ?? 30_000;
  let entries = new Map<string, Entry<T>>();
  let version = 0;
  let stopped = false;
  let resourceVersion = '';
  let current: { stop(): void } | undefined;
  let timer: NodeJS.Timeout | undefined;

  const listPath = options.query === undefined ? options.path : `${options.path}?${options.query}`;
  const watchQuery = options.query === undefined ? '' : `${options.query}&`;
  const essentials = options.essentials;

  function upsert(target: Map<string, Entry<T>>, received: JsonObject, previous?: Entry<T>): boolean {
    const raw = essentials === undefined ? received : essentials(received);
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

  function pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
  }

  /** 'absent': the collection is not served (and may not be); its objects, if any were, are gone. */
  async function list(): Promise<'listed' | 'absent'> {
    const reply = await options.client.request('GET', listPath);
    if (reply.status === 404 && options.mayBeAbsent === true) {
      if (entries.size > 0) {
        entries = new Map();
        version++;
        options.onChange();
      }
      return 'absent';
    }
    if (reply.status !== 200) throw new Error(`list ${options.path}: HTTP ${reply.status}`);
    const items = Array.isArray(reply.body.items) ? (reply.body.items as JsonObject[]) : [];
    const next = new Map<string, Entry<T>>();
    let changed = false;
    for (const raw of items) {
      const key = keyOf(raw);
      if (upsert(next, raw, entries.get(key))) changed = true;
    }
    for (const key of entries.keys()) if (!next.has(key)) changed = true;
    entries = next;
    resourceVersion = String(metadataOf(reply.body).resourceVersion ?? '');
    if (changed) {
      version++;
      options.onChange();
    }
    return 'listed';
  }

  /** Lists until the collection is served, then returns; logs when it is absent and when it appears. */
  async function awaitServed(): Promise<void> {
    options.log(
      `${options.path} is not served (is its CRD installed?); listing again every ${absentRetryMs} ms`,
    );
    while (!stopped) {
      await pause(absentRetryMs);
      if (stopped || (await list()) === 'listed') break;
    }
    if (!stopped) options.log(`${options.path} is served now`);
  }

  function onEvent(event: WatchEvent): 'relist' | undefined {
    const meta = metadataOf(event.object);
    if (event.type === 'ERROR') {
      return 'relist';
    }
    if (meta.resourceVersion !== undefined) resourceVersion = meta.resourceVersion;
    if (event.type === 'BOOKMARK') return undefined;
    const key = keyOf(event.object);
    let changed: boolean;
    if (event.type === 'DELETED') changed = entries.delete(key);
    else changed = upsert(entries, event.object, entries.get(key));
    if (changed) {
      version++;
      options.onChange();
    }
    return undefined;
  }

  async function loop(absent: boolean): Promise<void> {
    let needList = false;
    if (absent) await awaitServed();
    while (!stopped) {
      try {
        if (needList && (await list()) === 'absent') await awaitServed();
        needList = false;
        const path = `${options.path}?${watchQuery}watch=1&allowWatchBookmarks=true&resourceVersion=${resourceVersion}`;
        let relist = false;
        const handle = options.client.watch(path, (event) => {
          if (onEvent(event) === 'relist') {
            relist = true;
            handle.stop();
          }
        });
        current = handle;
        await handle.done;
        if (relist) needList = true;
      } catch (error) {
        if (stopped) return;
        options.log(`watch ${options.path}: ${(error as Error).message}; relisting`);
        needList = true;
        await pause(retryMs);
      }
    }
  }

  return {
    async start() {
      let listed: 'listed' | 'absent';
      for (;;) {
        try {
          listed = await list();
          break;
        } catch (error) {
          options.log(`list ${options.path}: ${(error as Error).message}; retrying`);
          await new Promise((resolve) => setTimeout(resolve, retryMs));
          if (stopped) return;
        }
      }
      void loop(listed === 'absent');
    },
    stop() {
      stopped = true;
      current?.stop();
      if (timer !== undefined) clearTimeout(timer);
    },
    items: () => entries,
    version: () => version,
  };
}

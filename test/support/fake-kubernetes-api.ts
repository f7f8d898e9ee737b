// One fake Kubernetes API server for the provider's unit tests, behind the same ApiClient the controller uses: it
// holds objects by their API path and answers get, list (label and field selectors), create, update, server-side
// apply, merge patch (the status subresource too, with resourceVersion preconditions) and delete as the API server
// does, and tells open watches what changed. A test that needs another answer (a refusal, a hang, a TokenReview)
// gives `answer`, which sees every request first.
import type {
  ApiClient,
  ApiReply,
  JsonObject,
  WatchEvent,
  WatchHandle,
} from '../../src/provider/kubernetes/api-client.js';
import { objectPath, WATCHED_KINDS } from '../../src/provider/kubernetes/watched-kinds.js';
import { applyMergePatch } from './apply-merge-patch.js';

export interface FakeRequest {
  method: string;
  /** As sent, query included. */
  path: string;
  /** The path without its query. */
  bare: string;
  query: URLSearchParams;
  body?: unknown;
  contentType?: string;
}

/** A reply instead of the store's; 'hang': none ever; undefined: the store answers. */
export type FakeAnswer = ApiReply | 'hang' | undefined;

export interface FakeWatch {
  /** As opened, query included. */
  path: string;
  send(event: WatchEvent): void;
  /** Ends the stream, as the API server does when a watch times out. */
  end(): void;
}

export interface FakeKubernetesApi {
  client: ApiClient;
  /** What the server holds, by item path (`/api/v1/namespaces/sys/secrets/ca`). */
  objects: Map<string, JsonObject>;
  /** Every request, watches included (method GET, query `watch=1`), in order. */
  requests: FakeRequest[];
  /** Sees every request first (replace it as a test goes on); may wait before it decides. */
  answer: (request: FakeRequest) => FakeAnswer | Promise<FakeAnswer>;
  /** The watches still open, in the order they were opened. */
  watches: FakeWatch[];
  /** `METHOD bare-path` of every request that was not a read, in order. */
  writes(): string[];
  /** Puts an object of a watched kind where the server keeps it, as it is (no new resourceVersion); its path. */
  add(object: JsonObject): string;
  /** Someone else's write of an object of a watched kind, as it is: held (or gone) and told to the watches. */
  send(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: JsonObject): void;
}

interface ApiPath {
  /** `/api/v1` or `/apis/<group>/<version>`. */
  prefix: string;
  namespace?: string;
  resource: string;
  name?: string;
  subresource?: string;
}

/** A path's parts, by the API's layout: prefix, [namespaces/<ns>/]<resource>[/<name>[/<subresource>]]. */
function apiPath(bare: string): ApiPath {
  const parts = bare.split('/').filter((p) => p !== '');
  const prefixLength = parts[0] === 'api' ? 2 : 3;
  const prefix = `/${parts.slice(0, prefixLength).join('/')}`;
  const rest = parts.slice(prefixLength);
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const [, namespace, resource = '', name, subresource] = rest;
    return { prefix, namespace, resource, name, subresource };
  }
  const [resource = '', name, subresource] = rest;
  return { prefix, resource, name, subresource };
}

const itemPath = (p: ApiPath): string =>
  `${p.prefix}${p.namespace === undefined ? '' : `/namespaces/${p.namespace}`}/${p.resource}/${p.name ?? ''}`;

const status = (code: number, reason: string, message: string): ApiReply => ({
  status: code,
  body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code, message },
});

const metadataOf = (object: JsonObject): JsonObject => (object.metadata ?? {}) as JsonObject;

/** The value at a dotted field path (`metadata.name`, `type`), as a string. */
function fieldValue(object: JsonObject, field: string): string {
  let value: unknown = object;
  for (const key of field.split('.')) value = (value as JsonObject | undefined)?.[key];
  return value === undefined ? '' : String(value);
}

/** Equality selectors (`a=b,c!=d`) and, for labels, existence (`a`, `!a`). */
function selected(object: JsonObject, query: URLSearchParams): boolean {
  const labels = (metadataOf(object).labels ?? {}) as Record<string, string>;
  const labelTerms = (query.get('labelSelector') ?? '').split(',').filter((t) => t !== '');
  const fieldTerms = (query.get('fieldSelector') ?? '').split(',').filter((t) => t !== '');
  const holds = (term: string, read: (key: string) => string | undefined): boolean => {
    const unequal = term.split('!=');
    if (unequal.length === 2) return read(unequal[0] ?? '') !== unequal[1];
    const [key = '', value] = term.split(/==?/);
    if (value !== undefined) return read(key) === value;
    return key.startsWith('!') ? read(key.slice(1)) === undefined : read(key) !== undefined;
  };
  return (
    labelTerms.every((t) => holds(t, (k) => labels[k])) &&
    fieldTerms.every((t) => holds(t, (k) => fieldValue(object, k)))
  );
}

/** Whether the item at `path` is in the collection `list` (a namespace's, or every namespace's). */
function inCollection(path: ApiPath, list: ApiPath): boolean {
  return (
    path.prefix === list.prefix &&
    path.resource === list.resource &&
    (list.namespace === undefined || path.namespace === list.namespace)
  );
}

/** Where the API server keeps an object of a kind the controller watches. */
function watchedPath(object: JsonObject): string {
  const kind = WATCHED_KINDS.find((k) => k.kind === object.kind && k.apiVersion === object.apiVersion);
  if (kind === undefined)
    throw new Error(`not a watched kind: ${String(object.apiVersion)} ${String(object.kind)}`);
  const { name, namespace } = metadataOf(object);
  return objectPath(
    kind.apiVersion,
    kind.resource,
    String(name),
    namespace === undefined ? undefined : String(namespace),
  );
}

export function createFakeKubernetesApi(
  answer: FakeKubernetesApi['answer'] = () => undefined,
): FakeKubernetesApi {
  const objects = new Map<string, JsonObject>();
  const requests: FakeRequest[] = [];
  const watches: (FakeWatch & { collection: ApiPath; query: URLSearchParams })[] = [];
  // A real API server's versions are never 0 (which means "any" in a request).
  let version = 1;
  let uids = 0;

  const api: FakeKubernetesApi = {
    objects,
    requests,
    answer,
    watches,
    writes: () => requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.bare}`),
    client: { request: sent, watch: opened },
    add(object) {
      const path = watchedPath(object);
      objects.set(path, object);
      return path;
    },
    send(type, object) {
      const path = watchedPath(object);
      if (type === 'DELETED') objects.delete(path);
      else objects.set(path, object);
      tell(type, path, object);
    },
  };

  function tell(type: WatchEvent['type'], path: string, object: JsonObject): void {
    const at = apiPath(path);
    for (const watch of watches)
      if (inCollection(at, watch.collection) && selected(object, watch.query))
        watch.send({ type, object: structuredClone(object) });
  }

  /** Stores `object` at `path` with a new resourceVersion (and a uid when new), and tells the watches. */
  function store(path: string, object: JsonObject): ApiReply {
    const before = objects.get(path);
    const existed = before !== undefined;
    const at = apiPath(path);
    // Newer than any version held, also those of objects a test put in place itself.
    version =
      Math.max(version, ...[...objects.values()].map((o) => Number(metadataOf(o).resourceVersion) || 0)) + 1;
    const metadata = metadataOf(object);
    const stored: JsonObject = {
      ...object,
      metadata: {
        ...metadata,
        name: at.name,
        ...(at.namespace === undefined ? {} : { namespace: at.namespace }),
        uid: (before === undefined ? undefined : metadataOf(before).uid) ?? metadata.uid ?? `uid-${++uids}`,
        resourceVersion: String(version),
      },
    };
    objects.set(path, stored);
    tell(existed ? 'MODIFIED' : 'ADDED', path, stored);
    return { status: existed ? 200 : 201, body: structuredClone(stored) };
  }

  function list(at: ApiPath, query: URLSearchParams): ApiReply {
    // A list's items carry no apiVersion and kind: the list says them once.
    const items = [...objects]
      .filter(([path, object]) => inCollection(apiPath(path), at) && selected(object, query))
      .map(([, { apiVersion: _a, kind: _k, ...rest }]) => structuredClone(rest));
    return { status: 200, body: { metadata: { resourceVersion: String(version) }, items } };
  }

  /** The object after a write to `at` (the item or its status) with the request's body, or why it is refused. */
  function written(
    request: FakeRequest,
    at: ApiPath,
    found: JsonObject | undefined,
  ): { object: JsonObject } | { refused: ApiReply } {
    const body = (request.body ?? {}) as JsonObject;
    const wanted = metadataOf(body).resourceVersion;
    if (found !== undefined && wanted !== undefined && wanted !== metadataOf(found).resourceVersion)
      return {
        refused: status(
          409,
          'Conflict',
          'the object has been modified; please apply your changes to the latest version',
        ),
      };
    if (request.method === 'PATCH' && request.contentType === 'application/apply-patch+yaml')
      // One field manager: what it applies replaces what it applied before; the status is not the spec's to set.
      return { object: { ...body, ...(found?.status === undefined ? {} : { status: found.status }) } };
    if (found === undefined)
      return { refused: status(404, 'NotFound', `${at.resource} "${at.name}" not found`) };
    const next = request.method === 'PATCH' ? (applyMergePatch(found, body) as JsonObject) : body;
    // A write to the status subresource changes only the status; one to the object, everything else.
    const { status: _ignored, ...rest } = next;
    return {
      object:
        at.subresource === 'status'
          ? { ...found, status: next.status }
          : { ...rest, ...(found.status === undefined ? {} : { status: found.status }) },
    };
  }

  async function respond(request: FakeRequest): Promise<ApiReply> {
    const decided = await api.answer(request);
    if (decided === 'hang') return new Promise<ApiReply>(() => {});
    if (decided !== undefined) return decided;
    const at = apiPath(request.bare);
    const path = at.name === undefined ? undefined : itemPath(at);
    const found = path === undefined ? undefined : objects.get(path);
    switch (request.method) {
      case 'GET':
        if (path === undefined) return list(at, request.query);
        return found === undefined
          ? status(404, 'NotFound', `${at.resource} "${at.name}" not found`)
          : { status: 200, body: structuredClone(found) };
      case 'POST': {
        const body = (request.body ?? {}) as JsonObject;
        const created = itemPath({ ...at, name: String(metadataOf(body).name ?? '') });
        if (objects.has(created))
          return status(
            409,
            'AlreadyExists',
            `${at.resource} "${String(metadataOf(body).name)}" already exists`,
          );
        return store(created, body);
      }
      case 'PUT':
      case 'PATCH': {
        const next = written(request, at, found);
        return 'refused' in next ? next.refused : store(path ?? request.bare, next.object);
      }
      case 'DELETE':
        if (path === undefined || found === undefined)
          return status(404, 'NotFound', `${at.resource} "${at.name}" not found`);
        objects.delete(path);
        tell('DELETED', path, found);
        return { status: 200, body: { kind: 'Status', apiVersion: 'v1', status: 'Success' } };
      default:
        throw new Error(`the fake Kubernetes API has no ${request.method}`);
    }
  }

  function fakeRequest(method: string, path: string, body?: unknown, contentType?: string): FakeRequest {
    const [bare = '', search = ''] = path.split('?');
    return {
      method,
      path,
      bare,
      query: new URLSearchParams(search),
      ...(body === undefined ? {} : { body }),
      ...(contentType === undefined ? {} : { contentType }),
    };
  }

  function sent(method: string, path: string, body?: unknown, contentType?: string): Promise<ApiReply> {
    const request = fakeRequest(method, path, body, contentType);
    requests.push(request);
    return respond(request);
  }

  function opened(path: string, onEvent: (event: WatchEvent) => void): WatchHandle {
    const request = fakeRequest('GET', path);
    requests.push(request);
    let end: () => void = () => {};
    let stopped = false;
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    const watch = {
      path,
      collection: apiPath(request.bare),
      query: request.query,
      send: onEvent,
      end: () => {
        watches.splice(watches.indexOf(watch), 1);
        end();
      },
    };
    watches.push(watch);
    // The watch request is answered like any other: a refusal ends it with the client's error.
    const done = (async () => {
      const decided = await api.answer(request);
      if (decided === 'hang' || stopped) return ended;
      if (decided !== undefined && decided.status !== 200) {
        watch.end();
        throw new Error(`watch ${request.bare}: HTTP ${decided.status}: ${JSON.stringify(decided.body)}`);
      }
      return ended;
    })();
    return {
      done,
      stop: () => {
        stopped = true;
        if (watches.includes(watch)) watch.end();
      },
    };
  }

  return api;
}

/** One collection's objects by name (`/api/v1/namespaces/sys/secrets` → `ca`), read and changed in place. */
export function objectsIn(api: FakeKubernetesApi, collection: string) {
  const path = (name: string): string => `${collection}/${name}`;
  return {
    names: (): string[] =>
      [...api.objects.keys()]
        .filter((p) => p.startsWith(`${collection}/`))
        .map((p) => p.slice(collection.length + 1)),
    get: (name: string): JsonObject | undefined => api.objects.get(path(name)),
    has: (name: string): boolean => api.objects.has(path(name)),
    set: (name: string, object: JsonObject): void => {
      api.objects.set(path(name), object);
    },
    delete: (name: string): boolean => api.objects.delete(path(name)),
  };
}

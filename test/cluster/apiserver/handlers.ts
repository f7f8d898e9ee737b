// The REST verbs on resources: get, list, create, update, patch (four kinds), delete, deletecollection.
import { parse as parseYaml } from 'yaml';
import { serverSideApply } from './apply.js';
import { type Lifecycle, nowTimestamp } from './lifecycle.js';
import { asKubeObject, isJsonObject, type JsonObject, type KubeObject } from './object.js';
import { jsonPatch, mergePatch } from './patch.js';
import type { RequestInfo } from './request-info.js';
import { apiVersionOf, CREATE_ONLY, type ResourceType } from './resources.js';
import { selectorPredicate } from './selectors.js';
import {
  ApiError,
  badRequest,
  conflict,
  methodNotAllowed,
  notFound,
  unsupportedMediaType,
} from './status.js';
import { strategicMerge } from './strategic.js';

export interface ApiRequest {
  method: string;
  info: RequestInfo;
  query: URLSearchParams;
  contentType: string;
  body: string;
}

export interface ApiResponse {
  code: number;
  body: JsonObject;
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch (error) {
    throw badRequest(`the request body is not valid JSON: ${(error as Error).message}`);
  }
}

function bodyObject(req: ApiRequest): KubeObject {
  const parsed = req.contentType.includes('yaml') ? parseYaml(req.body) : parseJson(req.body);
  const object = asKubeObject(parsed);
  if (typeof object === 'string') throw badRequest(object);
  return object;
}

function placeInNamespace(req: ApiRequest, object: KubeObject): void {
  const { type, namespace } = req.info;
  if (!type.namespaced) return;
  const given = object.metadata.namespace;
  if (given !== undefined && given !== '' && given !== namespace) {
    throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  object.metadata.namespace = namespace;
}

function checkKind(type: ResourceType, object: KubeObject): void {
  if (object.kind !== undefined && object.kind !== type.kind) {
    throw badRequest(`the kind of the object (${object.kind}) does not match the resource (${type.kind})`);
  }
}

export function list(lifecycle: Lifecycle, info: RequestInfo, query: URLSearchParams): JsonObject {
  const { type, namespace } = info;
  const matches = selectorPredicate(query.get('labelSelector'), query.get('fieldSelector'));
  const all = lifecycle.store.list(
    type.storageKey,
    type.namespaced && namespace !== '' ? namespace : undefined,
  );
  let items = all.filter(matches).map((o) => ({ ...o, apiVersion: apiVersionOf(type), kind: type.kind }));
  const metadata: JsonObject = { resourceVersion: String(lifecycle.store.resourceVersion()) };
  const token = query.get('continue');
  if (token) {
    const after = Buffer.from(token, 'base64url').toString('utf8');
    items = items.filter((o) => `${o.metadata.namespace ?? ''}/${o.metadata.name}` > after);
  }
  const limit = Number(query.get('limit') ?? '0');
  if (limit > 0 && items.length > limit) {
    items = items.slice(0, limit);
    const last = items[items.length - 1];
    metadata.continue = Buffer.from(`${last?.metadata.namespace ?? ''}/${last?.metadata.name}`).toString(
      'base64url',
    );
    metadata.remainingItemCount = all.filter(matches).length - limit;
  }
  return { kind: type.listKind, apiVersion: apiVersionOf(type), metadata, items };
}

function patched(req: ApiRequest, current: KubeObject): KubeObject {
  const ct = req.contentType.split(';')[0]?.trim() ?? '';
  let result: unknown;
  if (ct === 'application/merge-patch+json') result = mergePatch(current, parseJson(req.body));
  else if (ct === 'application/json-patch+json') result = jsonPatch(current, parseJson(req.body));
  else if (ct === 'application/strategic-merge-patch+json') {
    if (!req.info.type.builtin) throw unsupportedMediaType(ct);
    result = strategicMerge(current, parseJson(req.body));
  } else throw unsupportedMediaType(ct);
  const object = asKubeObject(result);
  if (typeof object === 'string') throw badRequest(object);
  return object;
}

function applyPatch(lifecycle: Lifecycle, req: ApiRequest): ApiResponse {
  const { type, namespace, name, subresource } = req.info;
  const manager = req.query.get('fieldManager');
  if (!manager)
    throw badRequest('PATCH, application/apply-patch+yaml: fieldManager is required for apply requests');
  const applied = bodyObject(req);
  placeInNamespace(req, applied);
  if (applied.metadata.name !== name)
    throw badRequest('the name of the object does not match the name on the URL');
  checkKind(type, applied);
  const force = req.query.get('force') === 'true';
  let existing: KubeObject | undefined;
  try {
    existing = lifecycle.get(type, namespace, name);
  } catch (error) {
    if (!(error instanceof ApiError && error.code === 404) || subresource !== '') throw error;
  }
  const result = serverSideApply(existing, applied, manager, force, type.builtin, nowTimestamp());
  if (!result.ok) {
    throw new ApiError(
      409,
      'Conflict',
      `Apply failed with ${result.conflicts.length} conflict(s): ${result.conflicts.join('; ')}`,
      {
        group: type.group,
        kind: type.resource,
        name,
        causes: result.conflicts.map((message) => ({ reason: 'FieldManagerConflict', message })),
      },
    );
  }
  if (existing === undefined) return { code: 201, body: lifecycle.create(type, result.object) };
  result.object.metadata.resourceVersion = existing.metadata.resourceVersion;
  return { code: 200, body: lifecycle.update(type, result.object, subresource === 'status' ? 'status' : '') };
}

function deleteOptions(req: ApiRequest): JsonObject {
  if (req.body.trim() === '') return {};
  const parsed = parseJson(req.body);
  return isJsonObject(parsed) ? parsed : {};
}

function deleteOne(lifecycle: Lifecycle, req: ApiRequest, name: string): KubeObject {
  const opts = deleteOptions(req);
  const preconditions = isJsonObject(opts.preconditions) ? opts.preconditions : {};
  const grace = opts.gracePeriodSeconds ?? req.query.get('gracePeriodSeconds');
  const options: Parameters<Lifecycle['delete']>[3] = {};
  if (grace !== undefined && grace !== null) options.gracePeriodSeconds = Number(grace);
  if (typeof preconditions.uid === 'string') options.preconditionUid = preconditions.uid;
  if (typeof preconditions.resourceVersion === 'string') {
    options.preconditionResourceVersion = preconditions.resourceVersion;
  }
  const policy = String(opts.propagationPolicy ?? req.query.get('propagationPolicy') ?? 'Background');
  const deleted = lifecycle.delete(req.info.type, req.info.namespace, name, options);
  if (policy === 'Orphan') orphanDependents(lifecycle, deleted);
  return deleted;
}

/** `propagationPolicy: Orphan`: dependents lose their owner reference instead of being collected. */
function orphanDependents(lifecycle: Lifecycle, owner: KubeObject): void {
  for (const t of lifecycle.registry.all()) {
    for (const o of lifecycle.store.list(t.storageKey)) {
      const refs = o.metadata.ownerReferences ?? [];
      if (!refs.some((r) => r.uid === owner.metadata.uid)) continue;
      const kept = refs.filter((r) => r.uid !== owner.metadata.uid);
      if (kept.length > 0) o.metadata.ownerReferences = kept;
      else delete o.metadata.ownerReferences;
      lifecycle.store.put(t.storageKey, o);
    }
  }
}

export function handle(lifecycle: Lifecycle, req: ApiRequest): ApiResponse {
  const { type, namespace, name, subresource } = req.info;
  const createOnly = CREATE_ONLY.has(type.storageKey);
  if (subresource !== '' && !type.subresources.includes(subresource)) {
    throw notFound({ group: type.group, resource: `${type.resource}/${subresource}`, kind: type.kind, name });
  }
  if (req.contentType.includes('protobuf')) throw unsupportedMediaType(req.contentType);
  const method = req.method;
  if (createOnly && !(method === 'POST' && name === ''))
    throw methodNotAllowed(`${type.resource} only supports create`);
  if (name === '') {
    if (method === 'GET') return { code: 200, body: list(lifecycle, req.info, req.query) };
    if (method === 'POST') {
      const object = bodyObject(req);
      checkKind(type, object);
      placeInNamespace(req, object);
      return { code: 201, body: lifecycle.create(type, object) };
    }
    if (method === 'DELETE') {
      const gone = list(lifecycle, req.info, req.query).items as KubeObject[];
      const items = gone.map((o) => deleteOne(lifecycle, { ...req, body: '' }, o.metadata.name ?? ''));
      return {
        code: 200,
        body: { kind: type.listKind, apiVersion: apiVersionOf(type), metadata: {}, items },
      };
    }
    throw methodNotAllowed(`the server does not allow this method on the requested resource`);
  }
  const sub = subresource === 'status' ? 'status' : '';
  switch (method) {
    case 'GET':
      return { code: 200, body: lifecycle.get(type, namespace, name) };
    case 'PUT': {
      const object = bodyObject(req);
      checkKind(type, object);
      placeInNamespace(req, object);
      if (object.metadata.name !== name)
        throw badRequest('the name of the object does not match the name on the URL');
      return { code: 200, body: lifecycle.update(type, object, sub) };
    }
    case 'PATCH': {
      if (req.contentType.startsWith('application/apply-patch')) return applyPatch(lifecycle, req);
      const current = lifecycle.get(type, namespace, name);
      const next = patched(req, current);
      if (next.metadata.name !== name)
        throw badRequest('the name of the object cannot be changed by a patch');
      if (next.metadata.resourceVersion === undefined)
        next.metadata.resourceVersion = current.metadata.resourceVersion;
      if (next.metadata.resourceVersion !== current.metadata.resourceVersion) {
        throw conflict(
          lifecycle.target(type, name),
          'the object has been modified; please apply your changes to the latest version and try again',
        );
      }
      return { code: 200, body: lifecycle.update(type, next, sub) };
    }
    case 'DELETE':
      return { code: 200, body: deleteOne(lifecycle, req, name) };
    default:
      throw methodNotAllowed(`the server does not allow this method on the requested resource`);
  }
}

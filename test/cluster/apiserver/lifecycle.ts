// Object lifecycle rules shared by HTTP handlers and in-process controllers: create, update, status,
// delete, with resourceVersion preconditions, generation, finalizers and graceful deletion.
import { randomUUID } from 'node:crypto';
import { clone, type JsonObject, type KubeObject } from './object.js';
import { apiVersionOf, type ResourceRegistry, type ResourceType } from './resources.js';
import { ApiError, alreadyExists, conflict, invalid, notFound, type Target } from './status.js';
import type { Store } from './store.js';

export interface LifecycleHooks {
  /** Fills defaults and allocations (clusterIP, ...) on create; may throw an ApiError. */
  onCreate: ((type: ResourceType, object: KubeObject) => void)[];
  /** Returns true when the object must go through graceful deletion (a running pod). */
  graceful: ((type: ResourceType, object: KubeObject, gracePeriodSeconds: number | undefined) => boolean)[];
}

export interface Lifecycle {
  store: Store;
  registry: ResourceRegistry;
  hooks: LifecycleHooks;
  get(type: ResourceType, namespace: string, name: string): KubeObject;
  create(type: ResourceType, object: KubeObject): KubeObject;
  /** Replaces the object (main resource or `status`), honouring a resourceVersion precondition. */
  update(type: ResourceType, object: KubeObject, subresource?: '' | 'status'): KubeObject;
  delete(
    type: ResourceType,
    namespace: string,
    name: string,
    options?: { gracePeriodSeconds?: number; preconditionUid?: string; preconditionResourceVersion?: string },
  ): KubeObject;
  /** Removes the object now, whatever its finalizers or grace period (used by the node agent). */
  forget(type: ResourceType, namespace: string, name: string): KubeObject | undefined;
  target(type: ResourceType, name?: string): Target;
}

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const SUFFIX = 'bcdfghjklmnpqrstvwxz2456789';

function randomSuffix(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += SUFFIX[Math.floor(Math.random() * SUFFIX.length)];
  return s;
}

function specOf(object: KubeObject): string {
  const { metadata: _m, status: _s, ...rest } = object;
  return JSON.stringify(rest);
}

export function nowTimestamp(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

export function createLifecycle(store: Store, registry: ResourceRegistry): Lifecycle {
  const hooks: LifecycleHooks = { onCreate: [], graceful: [] };

  const target = (type: ResourceType, name?: string): Target => {
    const t: Target = { group: type.group, resource: type.resource, kind: type.kind };
    if (name !== undefined) t.name = name;
    return t;
  };

  function namespaceCheck(type: ResourceType, namespace: string): void {
    if (!type.namespaced) return;
    const ns = store.get('/namespaces', '', namespace);
    if (ns === undefined) {
      throw notFound({ group: '', resource: 'namespaces', kind: 'Namespace', name: namespace });
    }
    if (ns.metadata.deletionTimestamp !== undefined) {
      throw new ApiError(
        403,
        'Forbidden',
        `${type.resource} is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
      );
    }
  }

  function finishDeletion(type: ResourceType, object: KubeObject): KubeObject | undefined {
    return store.remove(type.storageKey, object.metadata.namespace ?? '', object.metadata.name ?? '');
  }

  function withKind(type: ResourceType, object: KubeObject): KubeObject {
    return { ...object, apiVersion: apiVersionOf(type), kind: type.kind };
  }

  const lifecycle: Lifecycle = {
    store,
    registry,
    hooks,
    target,
    get(type, namespace, name) {
      const found = store.get(type.storageKey, type.namespaced ? namespace : '', name);
      if (found === undefined) throw notFound(target(type, name));
      return withKind(type, found);
    },
    create(type, input) {
      const object = clone(input);
      const meta = object.metadata;
      if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomSuffix()}`;
      const name = meta.name ?? '';
      if (name === '')
        throw invalid(target(type, name), [
          'metadata.name: Required value: name or generateName is required',
        ]);
      if (name.length > 253 || !NAME.test(name)) {
        throw invalid(target(type, name), [
          `metadata.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
        ]);
      }
      if (type.namespaced) {
        if (!meta.namespace) throw new ApiError(400, 'BadRequest', 'the namespace of the object must be set');
        namespaceCheck(type, meta.namespace);
      } else {
        delete meta.namespace;
      }
      if (store.get(type.storageKey, meta.namespace ?? '', name) !== undefined)
        throw alreadyExists(target(type, name));
      meta.uid = randomUUID();
      meta.creationTimestamp = nowTimestamp();
      meta.generation = 1;
      delete meta.resourceVersion;
      delete meta.deletionTimestamp;
      for (const hook of hooks.onCreate) hook(type, object);
      return withKind(type, store.put(type.storageKey, withKind(type, object)));
    },
    update(type, input, subresource = '') {
      const object = clone(input);
      const ns = type.namespaced ? (object.metadata.namespace ?? '') : '';
      const name = object.metadata.name ?? '';
      const old = store.get(type.storageKey, ns, name);
      if (old === undefined) throw notFound(target(type, name));
      const rv = object.metadata.resourceVersion;
      if (rv !== undefined && rv !== '' && rv !== old.metadata.resourceVersion) {
        throw conflict(
          target(type, name),
          'the object has been modified; please apply your changes to the latest version and try again',
        );
      }
      if (object.metadata.uid !== undefined && object.metadata.uid !== old.metadata.uid) {
        throw conflict(
          target(type, name),
          `Precondition failed: UID in precondition: ${object.metadata.uid}, UID in object meta: ${old.metadata.uid}`,
        );
      }
      let next: KubeObject;
      if (subresource === 'status') {
        next = clone(old);
        if (object.status === undefined) delete next.status;
        else next.status = object.status;
      } else {
        next = object;
        const immutable = [
          'uid',
          'creationTimestamp',
          'deletionTimestamp',
          'deletionGracePeriodSeconds',
          'generation',
        ] as const;
        for (const k of immutable) {
          if (old.metadata[k] === undefined) delete next.metadata[k];
          else (next.metadata as JsonObject)[k] = old.metadata[k];
        }
        next.metadata.namespace = old.metadata.namespace;
        if (!type.namespaced) delete next.metadata.namespace;
        if (type.subresources.includes('status')) {
          if (old.status === undefined) delete next.status;
          else next.status = old.status;
        }
        if (specOf(next) !== specOf(old)) next.metadata.generation = (old.metadata.generation ?? 1) + 1;
      }
      next.metadata.resourceVersion = old.metadata.resourceVersion;
      const typed = withKind(type, next);
      if (JSON.stringify(typed) === JSON.stringify(withKind(type, old))) return typed;
      // Finalizers gone: the object goes, unless a grace period is still running (a terminating pod).
      const graceRunning = (old.metadata.deletionGracePeriodSeconds ?? 0) > 0;
      if (
        old.metadata.deletionTimestamp !== undefined &&
        !graceRunning &&
        (typed.metadata.finalizers ?? []).length === 0
      ) {
        const gone = finishDeletion(type, typed);
        return withKind(type, gone ?? typed);
      }
      return withKind(type, store.put(type.storageKey, typed));
    },
    delete(type, namespace, name, options = {}) {
      const ns = type.namespaced ? namespace : '';
      const old = store.get(type.storageKey, ns, name);
      if (old === undefined) throw notFound(target(type, name));
      if (options.preconditionUid !== undefined && options.preconditionUid !== old.metadata.uid) {
        throw conflict(
          target(type, name),
          `Precondition failed: UID in precondition: ${options.preconditionUid}, UID in object meta: ${old.metadata.uid}`,
        );
      }
      if (
        options.preconditionResourceVersion !== undefined &&
        options.preconditionResourceVersion !== old.metadata.resourceVersion
      ) {
        throw conflict(
          target(type, name),
          'the object has been modified; please apply your changes to the latest version and try again',
        );
      }
      const graceful = hooks.graceful.some((g) => g(type, old, options.gracePeriodSeconds));
      if ((old.metadata.finalizers ?? []).length > 0 || graceful) {
        if (old.metadata.deletionTimestamp !== undefined) return withKind(type, old);
        old.metadata.deletionTimestamp = nowTimestamp();
        if (graceful) {
          const spec = old.spec as { terminationGracePeriodSeconds?: number } | undefined;
          old.metadata.deletionGracePeriodSeconds =
            options.gracePeriodSeconds ?? spec?.terminationGracePeriodSeconds ?? 30;
        }
        return withKind(type, store.put(type.storageKey, old));
      }
      return withKind(type, finishDeletion(type, old) ?? old);
    },
    forget(type, namespace, name) {
      const found = store.remove(type.storageKey, type.namespaced ? namespace : '', name);
      return found === undefined ? undefined : withKind(type, found);
    },
  };
  return lifecycle;
}

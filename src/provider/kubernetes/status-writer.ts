// Writes stamped statuses to the status subresource: only when they differ from what the object shows, as a JSON
// merge patch of just what differs, with the resourceVersion it was compared against as a precondition (route
// `parents` is an atomic list that other controllers' entries share: it goes whole, theirs kept, and a conflict
// means someone wrote first). On conflict it reads the object again and retries (condition times then carried
// over from that object by the runner's stamping). Any other refusal is thrown: it is the object's own problem,
// retried on its own backoff by the sink. Every request waits its turn under the write rate.
import { isRouteKind } from '../../api/route-kinds.js';
import { withinStatusLimits } from '../../api/status-limits.js';
import { PorticoError } from '../../platform/errors.js';
import { OWN_CONDITION_TYPES } from '../../translate/conditions.js';
import type { ObjectStatus } from '../../translate/index.js';
import { POLICY_KINDS } from '../../translate/portico-policies.js';
import { type ApiClient, expectStatus, type JsonObject } from './api-client.js';
import { mergePatch } from './merge-patch.js';
import { objectPath, WATCHED_KINDS } from './watched-kinds.js';
import type { WriteRate } from './write-rate.js';

export interface StatusWriterOptions {
  client: ApiClient;
  controllerName: string;
  onWrite(): void;
  /** The client side rate limit each request waits for; absent: none. */
  rate?: WriteRate;
}

export interface StatusWriter {
  /**
   * `status` is stamped against `current`, the object as last seen (informer; undefined when not known).
   * `stampAgainst` stamps it again against the status of an object read afresh; absent, it is written as is.
   * Resolves with the object's resourceVersion after this write (undefined when nothing was written).
   */
  write(
    status: ObjectStatus,
    current: JsonObject | undefined,
    stampAgainst?: (shownStatus: JsonObject | undefined) => ObjectStatus,
  ): Promise<string | undefined>;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** JSON with object keys sorted: two statuses are equal whatever order the server kept the keys in. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: Json) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  );
}

const MAX_ATTEMPTS = 4;

/** The conditions in `shown` of types Portico does not write: another controller's, kept as they are. */
function foreignConditions(shown: unknown): JsonObject[] {
  if (!Array.isArray(shown)) return [];
  return (shown as JsonObject[]).filter(
    (c) => typeof c.type === 'string' && !OWN_CONDITION_TYPES.has(c.type),
  );
}

/**
 * Our status with the conditions other controllers put on the object (and on each of its listeners, by name)
 * kept, after ours: `conditions` is an atomic list, so a write that left them out would remove them. Ours come
 * first, so where the list is too long, what is cut is theirs, as with route parents.
 */
function withForeignConditions(status: JsonObject, previous: JsonObject | undefined): JsonObject {
  if (previous === undefined) return status;
  const next: JsonObject = { ...status };
  const theirs = foreignConditions(previous.conditions);
  if (Array.isArray(status.conditions) && theirs.length > 0) {
    next.conditions = [...(status.conditions as JsonObject[]), ...theirs];
  }
  if (Array.isArray(status.listeners) && Array.isArray(previous.listeners)) {
    const shown = previous.listeners as JsonObject[];
    next.listeners = (status.listeners as JsonObject[]).map((listener) => {
      const before = shown.find((l) => l.name === listener.name);
      const kept = foreignConditions(before?.conditions);
      if (kept.length === 0 || !Array.isArray(listener.conditions)) return listener;
      return { ...listener, conditions: [...(listener.conditions as JsonObject[]), ...kept] };
    });
  }
  return next;
}

export function createStatusWriter(options: StatusWriterOptions): StatusWriter {
  const { client, rate } = options;

  function nextStatus(s: ObjectStatus, previous: JsonObject | undefined): JsonObject {
    const status = s.status as JsonObject;
    // A policy's ancestors are shared the same way as route parents: others' entries kept, first.
    if (s.kind === 'BackendTLSPolicy' || POLICY_KINDS.some((k) => k.kind === s.kind)) {
      const others = ((previous?.ancestors ?? []) as JsonObject[]).filter(
        (a) => a.controllerName !== options.controllerName,
      );
      return { ...status, ancestors: [...others, ...((status.ancestors ?? []) as JsonObject[])] };
    }
    if (!isRouteKind(s.kind))
      return withinStatusLimits(withForeignConditions(status, previous)) as JsonObject;
    // Route status is shared by every controller with a parent: keep the entries that are not ours, first, so
    // when there are too many, ours are the ones cut.
    const others = ((previous?.parents ?? []) as JsonObject[]).filter(
      (p) => p.controllerName !== options.controllerName,
    );
    const ours = (status.parents ?? []) as JsonObject[];
    return withinStatusLimits({ ...status, parents: [...others, ...ours] }) as JsonObject;
  }

  return {
    async write(s, current, stampAgainst) {
      const kind = WATCHED_KINDS.find((k) => k.kind === s.kind);
      if (kind === undefined) return undefined;
      const path = objectPath(kind.apiVersion, kind.resource, s.name, s.namespace);
      const id = `${s.kind} ${s.namespace === undefined ? '' : `${s.namespace}/`}${s.name}`;
      let object = current;
      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        if (object === undefined) {
          await rate?.take();
          const reply = await client.request('GET', path);
          if (reply.status === 404) return undefined;
          object = expectStatus(reply, `get ${id}`, [200]);
        }
        const meta = (object.metadata ?? {}) as JsonObject;
        // The status describes one generation: never write it onto a newer spec (the next pass will).
        if (typeof meta.generation === 'number' && meta.generation !== s.generation) return undefined;
        const previous = (object.status ?? {}) as JsonObject;
        const stamped = object === current ? s : (stampAgainst?.(previous) ?? s);
        const patch = mergePatch(previous, nextStatus(stamped, previous));
        if (patch === undefined) return undefined;
        await rate?.take();
        const body = { metadata: { resourceVersion: meta.resourceVersion }, status: patch };
        const reply = await client.request('PATCH', `${path}/status`, body, 'application/merge-patch+json');
        if (reply.status === 200) {
          options.onWrite();
          const written = (reply.body.metadata as JsonObject | undefined)?.resourceVersion;
          return typeof written === 'string' ? written : undefined;
        }
        if (reply.status === 404) return undefined;
        if (reply.status !== 409) expectStatus(reply, `write status of ${id}`, [200]);
        object = undefined; // conflict: someone wrote first; compare against the latest object
      }
      throw new PorticoError(
        'E_KUBERNETES',
        `write status of ${id}: still conflicting after ${MAX_ATTEMPTS} attempts`,
      );
    },
  };
}

// Deployments and DaemonSets (one node: one pod) become Pods. Pods are owned by the Deployment directly
// (no ReplicaSets); a changed template starts new pods and removes old ones once the new ones are ready.
import { createHash } from 'node:crypto';
import type { Lifecycle } from '../apiserver/lifecycle.js';
import {
  arrayAt,
  clone,
  isJsonObject,
  type JsonObject,
  type KubeObject,
  numberAt,
  objectAt,
} from '../apiserver/object.js';
import { apiVersionOf, builtinType, type ResourceType } from '../apiserver/resources.js';
import { ApiError } from '../apiserver/status.js';

const PODS = builtinType('pods');
const DEPLOYMENTS = builtinType('deployments');
const DAEMONSETS = builtinType('daemonsets');
const WATCHED = new Set([PODS.storageKey, DEPLOYMENTS.storageKey, DAEMONSETS.storageKey]);

export function podReady(pod: KubeObject): boolean {
  if (pod.metadata.deletionTimestamp !== undefined) return false;
  return arrayAt(pod, 'status', 'conditions').some(
    (c) => isJsonObject(c) && c.type === 'Ready' && c.status === 'True',
  );
}

function templateHash(template: JsonObject): string {
  return createHash('sha256').update(JSON.stringify(template)).digest('hex').slice(0, 10);
}

function tolerate(action: () => void, log: (line: string) => void): void {
  try {
    action();
  } catch (error) {
    if (error instanceof ApiError) log(`workloads: ${error.message}`);
    else throw error;
  }
}

function newPod(
  type: ResourceType,
  owner: KubeObject,
  template: JsonObject,
  hashLabel: string,
  hash: string,
): KubeObject {
  const meta = objectAt(template, 'metadata') ?? {};
  return {
    metadata: {
      generateName: `${owner.metadata.name}-${type === DAEMONSETS ? '' : `${hash}-`}`,
      namespace: owner.metadata.namespace ?? '',
      labels: { ...(objectAt(meta, 'labels') as Record<string, string> | undefined), [hashLabel]: hash },
      annotations: { ...(objectAt(meta, 'annotations') as Record<string, string> | undefined) },
      ownerReferences: [
        {
          apiVersion: apiVersionOf(type),
          kind: type.kind,
          name: owner.metadata.name ?? '',
          uid: owner.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: clone(objectAt(template, 'spec') ?? {}),
  };
}

function reconcileOne(
  lifecycle: Lifecycle,
  type: ResourceType,
  owner: KubeObject,
  log: (line: string) => void,
): void {
  if (owner.metadata.deletionTimestamp !== undefined) return;
  const ns = owner.metadata.namespace ?? '';
  const template = objectAt(owner, 'spec', 'template') ?? {};
  const hash = templateHash(template);
  const hashLabel = type === DAEMONSETS ? 'controller-revision-hash' : 'pod-template-hash';
  const owned = lifecycle.store
    .list(PODS.storageKey, ns)
    .filter((p) => (p.metadata.ownerReferences ?? []).some((r) => r.uid === owner.metadata.uid));
  const active = owned.filter((p) => p.metadata.deletionTimestamp === undefined);
  const current = active.filter((p) => p.metadata.labels?.[hashLabel] === hash);
  const old = active.filter((p) => p.metadata.labels?.[hashLabel] !== hash);
  const desired = type === DAEMONSETS ? 1 : (numberAt(owner, 'spec', 'replicas') ?? 1);
  const remove = (p: KubeObject) => tolerate(() => lifecycle.delete(PODS, ns, p.metadata.name ?? ''), log);
  for (let i = current.length; i < desired; i++) {
    tolerate(() => lifecycle.create(PODS, newPod(type, owner, template, hashLabel, hash)), log);
  }
  if (current.length > desired) {
    const extras = [...current]
      .sort((a, b) => Number(podReady(a)) - Number(podReady(b)))
      .slice(0, current.length - desired);
    extras.forEach(remove);
  }
  const readyCurrent = current.filter(podReady).length;
  if (readyCurrent >= desired) old.forEach(remove);
  const ready = active.filter(podReady).length;
  const generation = owner.metadata.generation ?? 1;
  const updated = Math.min(current.length, desired);
  const previous = objectAt(owner, 'status') ?? {};
  const condition = (t: string, ok: boolean, reason: string, message: string): JsonObject => {
    const before = arrayAt(previous, 'conditions')
      .filter(isJsonObject)
      .find((c) => c.type === t);
    const status = ok ? 'True' : 'False';
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const since = before?.status === status && before?.reason === reason ? before.lastTransitionTime : now;
    return {
      type: t,
      status,
      reason,
      message,
      lastUpdateTime: before?.status === status ? before.lastUpdateTime : now,
      lastTransitionTime: since,
    };
  };
  const status: JsonObject =
    type === DAEMONSETS
      ? {
          observedGeneration: generation,
          currentNumberScheduled: active.length,
          desiredNumberScheduled: 1,
          numberMisscheduled: 0,
          numberReady: ready,
          numberAvailable: ready,
          updatedNumberScheduled: updated,
          ...(ready < 1 ? { numberUnavailable: 1 } : {}),
        }
      : {
          observedGeneration: generation,
          replicas: active.length,
          updatedReplicas: updated,
          readyReplicas: ready,
          availableReplicas: ready,
          ...(desired - ready > 0 ? { unavailableReplicas: desired - ready } : {}),
          conditions: [
            condition(
              'Available',
              ready >= desired,
              ready >= desired ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable',
              ready >= desired
                ? 'Deployment has minimum availability.'
                : 'Deployment does not have minimum availability.',
            ),
            condition(
              'Progressing',
              true,
              readyCurrent >= desired && old.length === 0 ? 'NewReplicaSetAvailable' : 'ReplicaSetUpdated',
              `pods with template hash ${hash} are progressing`,
            ),
          ],
        };
  if (type === DEPLOYMENTS) {
    if (status.readyReplicas === 0) delete status.readyReplicas;
    if (status.availableReplicas === 0) delete status.availableReplicas;
  }
  const strip = (s: JsonObject) =>
    JSON.stringify({
      ...s,
      conditions: arrayAt(s, 'conditions').map((c) =>
        isJsonObject(c) ? { ...c, lastUpdateTime: 0, lastTransitionTime: 0 } : c,
      ),
    });
  if (strip(status) === strip(previous)) return;
  tolerate(() => lifecycle.update(type, { ...owner, status }, 'status'), log);
}

export function installWorkloadControllers(
  lifecycle: Lifecycle,
  resyncMs: number,
  log: (line: string) => void,
): () => void {
  let scheduled = false;
  let stopped = false;
  const reconcile = () => {
    scheduled = false;
    if (stopped) return;
    for (const type of [DEPLOYMENTS, DAEMONSETS]) {
      for (const owner of lifecycle.store.list(type.storageKey)) reconcileOne(lifecycle, type, owner, log);
    }
  };
  const schedule = () => {
    if (scheduled || stopped) return;
    scheduled = true;
    setImmediate(reconcile);
  };
  const unsubscribe = lifecycle.store.subscribe((e) => {
    if (WATCHED.has(e.storageKey) || e.storageKey === '/serviceaccounts') schedule();
  });
  const timer = setInterval(schedule, resyncMs);
  schedule();
  return () => {
    stopped = true;
    clearInterval(timer);
    unsubscribe();
  };
}

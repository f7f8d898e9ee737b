// Reading a fleet's generated objects and pods on the cluster, evicting its pods through the Eviction API, and
// recording every replica count and container end the fleet shows: the helpers of the fleet-shape suite.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Cluster } from '../../cluster/harness.js';
import { asList, call, type Loose, watch } from '../../cluster/kube-api.js';

/** Where a fleet's objects are: their namespace and common name, and the selector of its pods. */
export interface FleetPlace {
  namespace: string;
  name: string;
  selector: string;
}

const PATHS: Record<string, (ns: string, name: string) => string> = {
  ServiceAccount: (ns, name) => `/api/v1/namespaces/${ns}/serviceaccounts/${name}`,
  Service: (ns, name) => `/api/v1/namespaces/${ns}/services/${name}`,
  Secret: (ns, name) => `/api/v1/namespaces/${ns}/secrets/${name}`,
  Deployment: (ns, name) => `/apis/apps/v1/namespaces/${ns}/deployments/${name}`,
  DaemonSet: (ns, name) => `/apis/apps/v1/namespaces/${ns}/daemonsets/${name}`,
  HorizontalPodAutoscaler: (ns, name) =>
    `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/${name}`,
  PodDisruptionBudget: (ns, name) => `/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets/${name}`,
};

/** One of the fleet's objects as served, or undefined when it does not exist. */
export async function fleetObject(
  cluster: Cluster,
  fleet: FleetPlace,
  kind: string,
  name = fleet.name,
): Promise<Loose | undefined> {
  const path = PATHS[kind];
  if (path === undefined) throw new Error(`no path for ${kind}`);
  const r = await call(cluster, 'GET', path(fleet.namespace, name));
  if (r.status === 404) return undefined;
  if (r.status !== 200) throw new Error(`get ${kind} ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** The fleet's pods: all of them, or (`live`) the ready ones that are not being deleted. */
export async function fleetPods(cluster: Cluster, fleet: FleetPlace, live = false): Promise<Loose[]> {
  const r = await call(
    cluster,
    'GET',
    `/api/v1/namespaces/${fleet.namespace}/pods?labelSelector=${encodeURIComponent(fleet.selector)}`,
  );
  const pods = asList(r.body.items);
  if (!live) return pods;
  return pods.filter(
    (p) =>
      p.metadata?.deletionTimestamp === undefined &&
      asList(p.status?.conditions).some((c) => c.type === 'Ready' && c.status === 'True'),
  );
}

/** The kind of the workload that owns a pod (through its ReplicaSet for a Deployment). */
export function podOwnerKind(pod: Loose): string {
  const kind = String(asList(pod.metadata?.ownerReferences)[0]?.kind);
  return kind === 'ReplicaSet' ? 'Deployment' : kind;
}

/** Asks the Eviction API (policy/v1) to evict a pod; returns the HTTP status and the API server's message. */
export async function evict(cluster: Cluster, pod: Loose): Promise<{ status: number; message: string }> {
  const ns = String(pod.metadata?.namespace);
  const name = String(pod.metadata?.name);
  const r = await call(cluster, 'POST', `/api/v1/namespaces/${ns}/pods/${name}/eviction`, {
    apiVersion: 'policy/v1',
    kind: 'Eviction',
    metadata: { name, namespace: ns },
  });
  return { status: r.status, message: String(r.body.message ?? '') };
}

/** Whether a field manager's Apply entry of the object owns `spec.<field>`. */
export function appliesSpecField(object: Loose, manager: string, field: string): boolean {
  return asList(object.metadata?.managedFields).some(
    (m) =>
      m.manager === manager &&
      m.operation === 'Apply' &&
      m.fieldsV1?.['f:spec']?.[`f:${field}`] !== undefined,
  );
}

export interface ReplicaRecorder {
  /** Every spec.replicas the Deployment showed since the recorder started, in order. */
  stop(): number[];
}

/** Watches one Deployment and records its spec.replicas on every event (none can slip between two polls). */
export async function recordReplicas(cluster: Cluster, fleet: FleetPlace): Promise<ReplicaRecorder> {
  const seen: number[] = [];
  const selector = encodeURIComponent(`metadata.name=${fleet.name}`);
  const stream = await watch(
    cluster,
    `/apis/apps/v1/namespaces/${fleet.namespace}/deployments?watch=true&fieldSelector=${selector}`,
  );
  stream.onEvent((event) => seen.push(Number(event.object.spec?.replicas)));
  return {
    stop() {
      stream.close();
      return seen;
    },
  };
}

export interface ExitRecorder {
  /** `pod/container: exit code (reason)` for every container seen terminated since the recorder started. */
  stop(): string[];
}

/**
 * Watches the fleet's pods and records how each container ended: a proxy stopped by a rollout or a switch must
 * exit on its own after its drain, never be killed at the end of its grace period (137).
 */
export async function recordExits(cluster: Cluster, fleet: FleetPlace): Promise<ExitRecorder> {
  const ends = new Map<string, string>();
  const stream = await watch(
    cluster,
    `/api/v1/namespaces/${fleet.namespace}/pods?watch=true&labelSelector=${encodeURIComponent(fleet.selector)}`,
  );
  stream.onEvent((event) => {
    for (const c of asList(event.object.status?.containerStatuses)) {
      const ended = c.state?.terminated;
      if (ended === undefined) continue;
      const key = `${String(event.object.metadata?.name)}/${String(c.name)}`;
      ends.set(key, `${key}: ${String(ended.exitCode)} (${String(ended.reason)})`);
    }
  });
  return {
    stop() {
      stream.close();
      return [...ends.values()];
    },
  };
}

/**
 * Every container that ended exited 0 by itself after its drain (none killed at the end of its grace period), and
 * the proxies of at least `pods` pods were seen ending.
 */
export function assertExitedOnTheirOwn(t: TestContext, ended: string[], pods: number): void {
  t.diagnostic(`containers ended: ${ended.join('; ')}`);
  assert.ok(ended.filter((e) => e.includes('/proxy:')).length >= pods, `${pods} proxies seen ending`);
  assert.deepEqual(
    ended.filter((e) => !/: 0 \(/.test(e)),
    [],
    'every container exited 0 on its own',
  );
}

/** Reports how long each step of a test took since the previous one (where time goes on a loaded machine). */
export function stepTimer(t: TestContext): (step: string) => void {
  let last = Date.now();
  return (step) => {
    const now = Date.now();
    t.diagnostic(`${step}: ${now - last} ms`);
    last = now;
  };
}

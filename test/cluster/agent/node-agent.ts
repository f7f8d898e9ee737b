// The node agent: binds new pods to the one simulated node, gives each a loopback pod IP, runs it, and
// finishes graceful deletions once the containers have stopped.
import { join } from 'node:path';
import type { Lifecycle } from '../apiserver/lifecycle.js';
import { nowTimestamp } from '../apiserver/lifecycle.js';
import { arrayAt, isJsonObject, type KubeObject, numberAt, objectAt, stringAt } from '../apiserver/object.js';
import { builtinType } from '../apiserver/resources.js';
import { ApiError, invalid } from '../apiserver/status.js';
import type { TokenParams } from '../apiserver/token-api.js';
import type { AddressRange } from '../services/ip-range.js';
import type { PodNetwork } from './container-env.js';
import type { ImageRule } from './images.js';
import { type PodRunner, runPod } from './pod-runner.js';

export const NODE_NAME = 'portico-sim-node';
const PODS = builtinType('pods');
const SAS = builtinType('serviceaccounts');

export interface NodeAgentOptions {
  lifecycle: Lifecycle;
  issueToken(params: TokenParams): { token: string; exp: number };
  network: PodNetwork;
  images: ImageRule[];
  podIPs: AddressRange;
  dir: string;
  maxProbeIntervalMs: number;
  restartBackoffMs: { initial: number; max: number };
  resyncMs: number;
  minTokenExpirationSeconds: number;
  log: (line: string) => void;
}

export interface NodeAgent {
  stop(): Promise<void>;
}

/** Pod defaults and the ServiceAccount admission check a real API server applies on create. */
function admitPod(lifecycle: Lifecycle, pod: KubeObject, minTokenSeconds: number): void {
  const spec = objectAt(pod, 'spec') ?? {};
  pod.spec = spec;
  const sa = stringAt(spec, 'serviceAccountName') ?? 'default';
  spec.serviceAccountName = sa;
  spec.serviceAccount = sa;
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  if (lifecycle.store.get(SAS.storageKey, pod.metadata.namespace ?? '', sa) === undefined) {
    throw new ApiError(
      403,
      'Forbidden',
      `pods "${pod.metadata.name}" is forbidden: error looking up service account ${pod.metadata.namespace}/${sa}: serviceaccount "${sa}" not found`,
    );
  }
  if (!Array.isArray(spec.containers) || spec.containers.length === 0) {
    throw invalid(lifecycle.target(PODS, pod.metadata.name), ['spec.containers: Required value']);
  }
  const volumes = new Set(
    arrayAt(spec, 'volumes')
      .filter(isJsonObject)
      .map((v) => v.name),
  );
  const causes: string[] = [];
  arrayAt(spec, 'containers').forEach((c, i) => {
    arrayAt(c, 'volumeMounts').forEach((m, j) => {
      const name = isJsonObject(m) ? m.name : undefined;
      if (!volumes.has(name))
        causes.push(`spec.containers[${i}].volumeMounts[${j}].name: Not found: "${String(name)}"`);
    });
  });
  arrayAt(spec, 'volumes').forEach((v, i) => {
    arrayAt(v, 'projected', 'sources').forEach((source, j) => {
      const seconds = numberAt(source, 'serviceAccountToken', 'expirationSeconds');
      if (seconds !== undefined && seconds < minTokenSeconds) {
        causes.push(
          `spec.volumes[${i}].projected.sources[${j}].serviceAccountToken.expirationSeconds: Invalid value: ${seconds}: may not specify a duration less than ${minTokenSeconds} seconds`,
        );
      }
    });
  });
  if (causes.length > 0) throw invalid(lifecycle.target(PODS, pod.metadata.name), causes);
  pod.status = { phase: 'Pending', qosClass: 'BestEffort' };
}

export function startNodeAgent(o: NodeAgentOptions): NodeAgent {
  const { lifecycle } = o;
  const runners = new Map<string, { runner: PodRunner; ip: string; stopping: boolean }>();
  let stopped = false;

  lifecycle.hooks.onCreate.push((type, object) => {
    if (type === PODS) admitPod(lifecycle, object, o.minTokenExpirationSeconds);
  });
  lifecycle.hooks.graceful.push(
    (type, object, grace) => type === PODS && grace !== 0 && runners.has(object.metadata.uid ?? ''),
  );

  function bind(pod: KubeObject): void {
    const ip = o.podIPs.allocate();
    const uid = pod.metadata.uid ?? '';
    const spec = { ...(objectAt(pod, 'spec') ?? {}), nodeName: NODE_NAME };
    const bound = lifecycle.update(PODS, { ...pod, spec });
    const status = {
      ...(objectAt(bound, 'status') ?? {}),
      phase: 'Pending',
      hostIP: '127.0.0.1',
      hostIPs: [{ ip: '127.0.0.1' }],
      podIP: ip,
      podIPs: [{ ip }],
      startTime: nowTimestamp(),
      conditions: [
        { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: nowTimestamp() },
      ],
    };
    const running = lifecycle.update(PODS, { ...bound, status }, 'status');
    const podDir = join(o.dir, 'pods', `${pod.metadata.namespace}_${pod.metadata.name}_${uid.slice(0, 8)}`);
    const runner = runPod({ ...o, podDir }, running);
    runners.set(uid, { runner, ip, stopping: false });
  }

  function finish(pod: KubeObject, graceSeconds: number, removeObject: boolean): void {
    const uid = pod.metadata.uid ?? '';
    const entry = runners.get(uid);
    if (entry === undefined || entry.stopping) return;
    entry.stopping = true;
    void entry.runner.terminate(graceSeconds).then(() => {
      runners.delete(uid);
      o.podIPs.release(entry.ip);
      if (!removeObject) return;
      const current = lifecycle.store.get(
        PODS.storageKey,
        pod.metadata.namespace ?? '',
        pod.metadata.name ?? '',
      );
      if (current?.metadata.uid === uid)
        lifecycle.forget(PODS, pod.metadata.namespace ?? '', pod.metadata.name ?? '');
    });
  }

  const unsubscribe = lifecycle.store.subscribe((event) => {
    if (event.storageKey !== PODS.storageKey || stopped) return;
    const pod = event.object;
    setImmediate(() => {
      if (stopped) return;
      if (event.type === 'DELETED') return finish(pod, 0, false);
      if (pod.metadata.deletionTimestamp !== undefined) {
        if (!runners.has(pod.metadata.uid ?? '')) {
          lifecycle.forget(PODS, pod.metadata.namespace ?? '', pod.metadata.name ?? '');
          return;
        }
        const grace =
          pod.metadata.deletionGracePeriodSeconds ??
          numberAt(pod, 'spec', 'terminationGracePeriodSeconds') ??
          30;
        return finish(pod, grace, true);
      }
      if (
        event.type === 'ADDED' &&
        stringAt(pod, 'spec', 'nodeName') === undefined &&
        !runners.has(pod.metadata.uid ?? '')
      ) {
        try {
          bind(pod);
        } catch (error) {
          if (!(error instanceof ApiError)) throw error;
        }
      }
    });
  });

  return {
    async stop() {
      stopped = true;
      unsubscribe();
      await Promise.all([...runners.values()].map((e) => e.runner.terminate(2)));
      runners.clear();
    },
  };
}

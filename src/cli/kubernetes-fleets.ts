// What `describe` shows of a fleet on a cluster: its workload's replica counts, and each proxy pod with the
// reason it is not running when it is not (unschedulable, crash-looping, an image that cannot be pulled), which
// a Gateway's Programmed=False "waiting for a ready proxy" cannot say by itself.
import {
  OWNING_GATEWAY_NAME_LABEL,
  OWNING_GATEWAY_NAMESPACE_LABEL,
  OWNING_GATEWAYCLASS_LABEL,
} from '../ir/fleet-infra.js';
import type { FleetView } from './fleet-view.js';

interface ObjectMeta {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
}

export interface KubernetesWorkload {
  kind?: string;
  metadata?: ObjectMeta;
  spec?: { replicas?: number; selector?: { matchLabels?: Record<string, string> } };
  status?: {
    replicas?: number;
    readyReplicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    numberReady?: number;
    desiredNumberScheduled?: number;
  };
}

interface ContainerState {
  waiting?: { reason?: string; message?: string };
  terminated?: { reason?: string; exitCode?: number };
}

export interface KubernetesPod {
  metadata?: ObjectMeta & { deletionTimestamp?: string };
  status?: {
    phase?: string;
    conditions?: { type?: string; status?: string; reason?: string; message?: string }[];
    containerStatuses?: {
      name?: string;
      ready?: boolean;
      restartCount?: number;
      state?: ContainerState;
      lastState?: ContainerState;
    }[];
  };
}

/** Whether the pod is one of the workload's: same namespace, and every label of its selector. */
function ownedBy(pod: KubernetesPod, w: KubernetesWorkload): boolean {
  const selector = w.spec?.selector?.matchLabels;
  if (selector === undefined || pod.metadata?.namespace !== w.metadata?.namespace) return false;
  const labels = pod.metadata?.labels ?? {};
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

/** STATUS as kubectl words it: Terminating, a container's waiting reason, else the phase. */
function podStatus(pod: KubernetesPod): string {
  if (pod.metadata?.deletionTimestamp !== undefined) return 'Terminating';
  const waiting = pod.status?.containerStatuses?.find((c) => c.state?.waiting?.reason !== undefined);
  return waiting?.state?.waiting?.reason ?? pod.status?.phase ?? 'Unknown';
}

/** Why the pod does not serve, in the scheduler's or kubelet's own words; empty when nothing is wrong. */
export function podProblem(pod: KubernetesPod): string {
  const unscheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  if (unscheduled !== undefined)
    return `${unscheduled.reason ?? 'Unschedulable'}: ${unscheduled.message ?? ''}`;
  for (const c of pod.status?.containerStatuses ?? []) {
    const waiting = c.state?.waiting;
    if (waiting?.message !== undefined) return `${c.name}: ${waiting.message}`;
    const last = c.lastState?.terminated;
    if (c.ready !== true && last !== undefined)
      return `${c.name}: last exit ${last.reason ?? ''} (code ${last.exitCode ?? '?'})`;
  }
  return '';
}

function podRow(pod: KubernetesPod): string[] {
  const containers = pod.status?.containerStatuses ?? [];
  const ready = `${containers.filter((c) => c.ready === true).length}/${containers.length}`;
  const restarts = containers.reduce((sum, c) => sum + (c.restartCount ?? 0), 0);
  return [pod.metadata?.name ?? '', ready, podStatus(pod), String(restarts), podProblem(pod)];
}

function replicaSummary(w: KubernetesWorkload): string {
  const s = w.status ?? {};
  if (w.kind === 'DaemonSet') return `${s.numberReady ?? 0}/${s.desiredNumberScheduled ?? 0} ready`;
  const wanted = w.spec?.replicas ?? s.replicas ?? 0;
  return `${s.readyReplicas ?? 0}/${wanted} ready, ${s.updatedReplicas ?? 0} up-to-date, ${s.availableReplicas ?? 0} available`;
}

/**
 * One fleet's view from its workload and the pods listed with it; `pods` undefined when they could not be read
 * (a kubeconfig allowed to read Deployments but not pods), so the replica counts are all there is.
 */
export function kubernetesFleetView(w: KubernetesWorkload, pods: KubernetesPod[] | undefined): FleetView {
  const labels = w.metadata?.labels ?? {};
  const gatewayNamespace = labels[OWNING_GATEWAY_NAMESPACE_LABEL];
  const gatewayName = labels[OWNING_GATEWAY_NAME_LABEL];
  const className = labels[OWNING_GATEWAYCLASS_LABEL];
  const fleet =
    gatewayNamespace !== undefined && gatewayName !== undefined
      ? `${gatewayNamespace}/${gatewayName}`
      : (className ?? w.metadata?.name ?? '');
  const details: [string, string][] = [
    [w.kind ?? 'Workload', `${w.metadata?.namespace ?? ''}/${w.metadata?.name ?? ''}`],
    ['Replicas', replicaSummary(w)],
  ];
  if (pods === undefined) details.push(['Pods', 'not readable with this kubeconfig']);
  return {
    fleet,
    serves: (gateway, gatewayClass) =>
      fleet === gateway || (className !== undefined && className === gatewayClass),
    details,
    proxies: {
      header: ['POD', 'READY', 'STATUS', 'RESTARTS', 'PROBLEM'],
      rows: (pods ?? []).filter((p) => ownedBy(p, w)).map(podRow),
    },
  };
}

// The EndpointSlice controller: one slice per Service with a selector, listing its pods with ready/
// serving/terminating conditions and the Service's ports resolved to container ports.

import { resolvePort } from '../agent/probes.js';
import { podReady } from '../agent/workloads.js';
import type { Lifecycle } from '../apiserver/lifecycle.js';
import {
  arrayAt,
  isJsonObject,
  type JsonObject,
  type KubeObject,
  objectAt,
  stringAt,
} from '../apiserver/object.js';
import { builtinType } from '../apiserver/resources.js';
import { matchesLabels, requirementsOf } from '../apiserver/selectors.js';
import { ApiError } from '../apiserver/status.js';

const PODS = builtinType('pods');
const SERVICES = builtinType('services');
const SLICES = builtinType('endpointslices');
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
const MANAGED_BY = 'endpointslice-controller.k8s.io';

function targetPort(pod: KubeObject | undefined, port: JsonObject): number | undefined {
  const target = port.targetPort ?? port.port;
  if (typeof target === 'number') return target;
  const containers = arrayAt(pod, 'spec', 'containers').filter(isJsonObject);
  for (const c of containers) {
    const found = resolvePort(c, target);
    if (found !== undefined) return found;
  }
  return undefined;
}

function desiredSlice(service: KubeObject, pods: KubeObject[]): KubeObject {
  const ns = service.metadata.namespace ?? '';
  const svcPorts = arrayAt(service, 'spec', 'ports').filter(isJsonObject);
  const ports = svcPorts
    .map((p) => ({
      name: String(p.name ?? ''),
      port: targetPort(pods[0], p),
      protocol: String(p.protocol ?? 'TCP'),
    }))
    .filter((p) => p.port !== undefined || pods.length === 0)
    .map((p) => (p.port === undefined ? { name: p.name, protocol: p.protocol } : p));
  const endpoints = pods
    .filter((p) => stringAt(p, 'status', 'podIP') !== undefined)
    .map((p) => {
      const terminating = p.metadata.deletionTimestamp !== undefined;
      const ready = podReady(p);
      return {
        addresses: [stringAt(p, 'status', 'podIP') ?? ''],
        conditions: {
          ready,
          serving:
            ready ||
            (terminating &&
              arrayAt(p, 'status', 'containerStatuses').some((c) => isJsonObject(c) && c.ready === true)),
          terminating,
        },
        nodeName: stringAt(p, 'spec', 'nodeName') ?? '',
        targetRef: { kind: 'Pod', namespace: ns, name: p.metadata.name ?? '', uid: p.metadata.uid ?? '' },
      };
    });
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${service.metadata.name}-sim`,
      namespace: ns,
      labels: {
        [SERVICE_NAME_LABEL]: service.metadata.name ?? '',
        'endpointslice.kubernetes.io/managed-by': MANAGED_BY,
      },
      ownerReferences: [
        {
          apiVersion: 'v1',
          kind: 'Service',
          name: service.metadata.name ?? '',
          uid: service.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    addressType: 'IPv4',
    endpoints,
    ports,
  };
}

export function installEndpointSliceController(
  lifecycle: Lifecycle,
  log: (line: string) => void,
): () => void {
  let scheduled = false;
  let stopped = false;
  const reconcile = () => {
    scheduled = false;
    if (stopped) return;
    for (const service of lifecycle.store.list(SERVICES.storageKey)) {
      const selector = objectAt(service, 'spec', 'selector') as Record<string, string> | undefined;
      if (selector === undefined || service.metadata.deletionTimestamp !== undefined) continue;
      const ns = service.metadata.namespace ?? '';
      const requirements = requirementsOf({ matchLabels: selector });
      const pods = lifecycle.store
        .list(PODS.storageKey, ns)
        .filter((p) => matchesLabels(requirements, p.metadata.labels));
      const want = desiredSlice(service, pods);
      const have = lifecycle.store.get(SLICES.storageKey, ns, want.metadata.name ?? '');
      try {
        if (have === undefined) lifecycle.create(SLICES, want);
        else {
          const next = {
            ...have,
            endpoints: want.endpoints,
            ports: want.ports,
            metadata: { ...have.metadata, labels: want.metadata.labels },
          };
          if (JSON.stringify(next) !== JSON.stringify(have)) lifecycle.update(SLICES, next);
        }
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        log(`endpointslices: ${error.message}`);
      }
    }
  };
  const unsubscribe = lifecycle.store.subscribe((e) => {
    if (e.storageKey !== PODS.storageKey && e.storageKey !== SERVICES.storageKey) return;
    if (scheduled || stopped) return;
    scheduled = true;
    setImmediate(reconcile);
  });
  return () => {
    stopped = true;
    unsubscribe();
  };
}

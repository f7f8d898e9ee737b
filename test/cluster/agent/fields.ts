// Downward API field paths of a pod.
import type { KubeObject } from '../apiserver/object.js';
import { stringAt } from '../apiserver/object.js';

export function fieldValue(pod: KubeObject, fieldPath: string): string {
  const label = /^metadata\.labels\['(.+)'\]$/.exec(fieldPath);
  if (label !== null) return pod.metadata.labels?.[label[1] ?? ''] ?? '';
  const annotation = /^metadata\.annotations\['(.+)'\]$/.exec(fieldPath);
  if (annotation !== null) return pod.metadata.annotations?.[annotation[1] ?? ''] ?? '';
  switch (fieldPath) {
    case 'metadata.name':
      return pod.metadata.name ?? '';
    case 'metadata.namespace':
      return pod.metadata.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata.uid ?? '';
    case 'spec.serviceAccountName':
      return stringAt(pod, 'spec', 'serviceAccountName') ?? 'default';
    case 'spec.nodeName':
      return stringAt(pod, 'spec', 'nodeName') ?? '';
    case 'status.podIP':
      return stringAt(pod, 'status', 'podIP') ?? '';
    case 'status.hostIP':
      return stringAt(pod, 'status', 'hostIP') ?? '';
    default:
      return '';
  }
}

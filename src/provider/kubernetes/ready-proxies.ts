// A proxy's Ack counts toward Programmed only once its pod is a ready endpoint of its fleet's Service: before
// that the Service sends it no traffic, and `kubectl wait --for=condition=Programmed` would return while
// requests to the Gateway's address still fail (the kubelet marks a pod Ready only at its next probe).
import type { EndpointSlice } from '../../api/core.js';
import { SERVICE_NAME_LABEL } from '../../translate/lookup.js';

/** Where a fleet's proxies run: its Service (`namespace/name`); proxies are named by their pod. */
export type FleetService = (fleet: string) => string | undefined;

function podOf(endpoint: EndpointSlice['endpoints'][number]): string | undefined {
  const ref = endpoint.targetRef as { kind?: unknown; name?: unknown } | undefined;
  return ref?.kind === 'Pod' && typeof ref.name === 'string' ? ref.name : undefined;
}

/**
 * `namespace/service` → the pods that are ready endpoints of it, for the given Services only (absent `ready`
 * counts as ready, as the EndpointSlice API says).
 */
export function readyEndpointPods(
  slices: readonly EndpointSlice[],
  services: ReadonlySet<string>,
): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const slice of slices) {
    const service = slice.metadata.labels?.[SERVICE_NAME_LABEL];
    if (service === undefined) continue;
    const key = `${slice.metadata.namespace ?? ''}/${service}`;
    if (!services.has(key)) continue;
    for (const endpoint of slice.endpoints) {
      const pod = podOf(endpoint);
      if (pod === undefined || endpoint.conditions.ready === false) continue;
      const pods = out.get(key);
      if (pods === undefined) out.set(key, new Set([pod]));
      else pods.add(pod);
    }
  }
  return out;
}

/** The nodes (proxies, named by their pod) that are ready endpoints of their fleet's Service. */
export function nodesOnReadyPods<T extends { node: string; fleet: string }>(
  nodes: readonly T[],
  fleetService: FleetService,
  slices: readonly EndpointSlice[],
): T[] {
  if (nodes.length === 0) return [];
  const serviceOf = new Map(nodes.map((n) => [n.fleet, fleetService(n.fleet)]));
  const services = new Set([...serviceOf.values()].filter((s) => s !== undefined));
  const ready = readyEndpointPods(slices, services);
  return nodes.filter((n) => {
    const service = serviceOf.get(n.fleet);
    return service !== undefined && ready.get(service)?.has(n.node) === true;
  });
}

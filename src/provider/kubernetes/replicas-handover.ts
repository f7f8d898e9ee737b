// Handing a Deployment's replicas to its HorizontalPodAutoscaler without a dip. Server-side apply removes a field
// its manager stops applying when no other manager owns it, and the API server then defaults replicas to 1: all
// proxies but one would stop before the autoscaler scales back up. So before the first apply without replicas, a
// second field manager takes the field over at its current value (Kubernetes' documented handover); the
// autoscaler then changes it through the scale subresource, and Portico's apply never names it again.
import { FIELD_MANAGER } from '../../ir/well-known.js';
import type { JsonObject } from './api-client.js';

export const REPLICAS_HANDOVER_MANAGER = `${FIELD_MANAGER}-replicas-handover`;

/** The served Deployment's replicas while Portico's own apply owns the field; undefined once it does not. */
export function appliedReplicas(served: JsonObject): number | undefined {
  const replicas = (served.spec as JsonObject | undefined)?.replicas;
  if (typeof replicas !== 'number') return undefined;
  const managed = ((served.metadata as JsonObject | undefined)?.managedFields ?? []) as JsonObject[];
  const owned = managed.some((entry) => {
    const spec = (entry.fieldsV1 as JsonObject | undefined)?.['f:spec'] as JsonObject | undefined;
    return (
      entry.manager === FIELD_MANAGER && entry.operation === 'Apply' && spec?.['f:replicas'] !== undefined
    );
  });
  return owned ? replicas : undefined;
}

/** What the handover manager applies: the replicas as they are, and nothing else. */
export function replicasHandover(namespace: string, name: string, replicas: number): JsonObject {
  return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace }, spec: { replicas } };
}

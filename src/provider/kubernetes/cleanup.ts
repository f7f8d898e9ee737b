// What uninstalling a controller removes beyond its own release: the proxy fleets it made (found by the
// controller-namespace label on every object it creates), its discovery certificate Secrets, and its leader
// Lease. Proxies drain as their pods terminate; Gateways and routes, the users' objects, stay.
import { CONTROLLER_NAMESPACE_LABEL } from '../../infra/kubernetes/render.js';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../../ir/well-known.js';
import { PorticoError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log-line.js';
import { type ApiClient, expectStatus, type JsonObject } from './api-client.js';
import { leaseName } from './leader-election.js';
import { collectionPath, objectPath } from './watched-kinds.js';

export interface CleanupOptions {
  client: ApiClient;
  /** The controller's namespace. */
  namespace: string;
  controllerName: string;
  /** Its Deployment, scaled to zero first. */
  controllerDeployment: string;
  /** Where its fleets may live: its own namespace (Controller Namespace Mode), these namespaces, or all. */
  fleetNamespaces: 'own' | 'all' | string[];
  log: Logger;
}

const FLEET_KINDS = [
  { kind: 'HorizontalPodAutoscaler', apiVersion: 'autoscaling/v2', resource: 'horizontalpodautoscalers' },
  { kind: 'PodDisruptionBudget', apiVersion: 'policy/v1', resource: 'poddisruptionbudgets' },
  { kind: 'DaemonSet', apiVersion: 'apps/v1', resource: 'daemonsets' },
  { kind: 'Deployment', apiVersion: 'apps/v1', resource: 'deployments' },
  { kind: 'Service', apiVersion: 'v1', resource: 'services' },
  { kind: 'ServiceAccount', apiVersion: 'v1', resource: 'serviceaccounts' },
  { kind: 'ConfigMap', apiVersion: 'v1', resource: 'configmaps' },
] as const;

async function deleteListed(
  client: ApiClient,
  kind: { kind: string; apiVersion: string; resource: string },
  namespace: string | undefined,
  selector: string,
  log: Logger,
): Promise<number> {
  const path = `${collectionPath(kind.apiVersion, kind.resource, namespace)}?labelSelector=${encodeURIComponent(selector)}`;
  const list = expectStatus(await client.request('GET', path), `list ${kind.resource}`, [200]);
  let deleted = 0;
  for (const item of (list.items ?? []) as JsonObject[]) {
    const meta = item.metadata as { name: string; namespace?: string };
    const reply = await client.request(
      'DELETE',
      objectPath(kind.apiVersion, kind.resource, meta.name, meta.namespace),
      {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        propagationPolicy: 'Background',
      },
    );
    expectStatus(reply, `delete ${kind.kind} ${meta.namespace}/${meta.name}`, [200, 202, 404]);
    log.info(`deleted ${kind.kind} ${meta.namespace}/${meta.name}`);
    deleted++;
  }
  return deleted;
}

/**
 * Scales the controller's Deployment to zero and waits until its pods are gone, so nothing recreates what
 * cleanup deletes (a pre-delete hook runs while the release still exists).
 */
async function stopController(options: CleanupOptions, timeoutMs = 90_000): Promise<void> {
  const { client, namespace } = options;
  const path = objectPath('apps/v1', 'deployments', options.controllerDeployment, namespace);
  const reply = await client.request(
    'PATCH',
    path,
    { spec: { replicas: 0 } },
    'application/merge-patch+json',
  );
  if (reply.status === 404) return;
  expectStatus(reply, `scale Deployment ${namespace}/${options.controllerDeployment}`, [200]);
  const selector = encodeURIComponent('app.kubernetes.io/component=controller');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pods = expectStatus(
      await client.request('GET', `${collectionPath('v1', 'pods', namespace)}?labelSelector=${selector}`),
      'list controller pods',
      [200],
    );
    if (((pods.items ?? []) as unknown[]).length === 0) return;
    if (Date.now() > deadline) {
      throw new PorticoError('E_KUBERNETES', `the controller's pods in ${namespace} did not stop`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Deletes what the controller of `namespace` made; returns how many objects went. */
export async function removeControllerObjects(options: CleanupOptions): Promise<number> {
  const { client, namespace, log } = options;
  await stopController(options);
  const fleetSelector = `${CONTROLLER_NAMESPACE_LABEL}=${namespace}`;
  const scopes =
    options.fleetNamespaces === 'own'
      ? [namespace]
      : options.fleetNamespaces === 'all'
        ? [undefined]
        : [...new Set([namespace, ...options.fleetNamespaces])];
  let deleted = 0;
  for (const scope of scopes) {
    for (const kind of FLEET_KINDS) deleted += await deleteListed(client, kind, scope, fleetSelector, log);
  }
  // Certificates: certgen's CA and server Secrets and every fleet's client certificate.
  const secrets = { kind: 'Secret', apiVersion: 'v1', resource: 'secrets' };
  deleted += await deleteListed(client, secrets, namespace, `${MANAGED_BY_LABEL}=${MANAGED_BY}`, log);
  const lease = objectPath('coordination.k8s.io/v1', 'leases', leaseName(options.controllerName), namespace);
  const reply = await client.request('DELETE', lease);
  expectStatus(reply, `delete Lease ${namespace}/${leaseName(options.controllerName)}`, [200, 202, 404]);
  if (reply.status !== 404) deleted++;
  return deleted;
}

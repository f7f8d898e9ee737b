// Installs Portico the way users do: `helm install` of charts/gateway-helm with the toolchain's helm, the image
// the toolchain built (already in the node's containerd), waiting for the controller to be ready.
import { join } from 'node:path';
import { REPO } from '../../../toolchain/manifest.js';
import type { Cluster } from '../../cluster/harness.js';
import { helm } from '../../cluster/helm.js';
import { apply, asList, call } from '../../cluster/kube-api.js';

export const CHART = join(REPO, 'charts/gateway-helm');

/**
 * Every namespace the e2e files make enforces Pod Security Admission `restricted`: the API server refuses any
 * Portico pod (controller, certgen and cleanup hooks, proxies in either mode) that does not meet it.
 */
export const RESTRICTED = { 'pod-security.kubernetes.io/enforce': 'restricted' };

/** A container's securityContext that Pod Security `restricted` admits: the test's own backends use it. */
export const RESTRICTED_CONTAINER = {
  runAsNonRoot: true,
  runAsUser: 65532,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

/** A namespace (created or updated) with `labels` besides RESTRICTED. */
export async function restrictedNamespace(
  cluster: Cluster,
  name: string,
  labels: Record<string, string> = {},
): Promise<void> {
  trackNamespace(name);
  await apply(
    cluster,
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels: { ...RESTRICTED, ...labels } },
    } as never,
    'namespaces',
    'e2e',
  );
}

export interface Release {
  name: string;
  namespace: string;
  /** `helm uninstall` (once; the namespace stays for cleanup() to delete). */
  uninstall(): Promise<void>;
}

/** What a test file created on the shared cluster, removed by cleanup() so the next file starts clean. */
const created = {
  releases: [] as Release[],
  namespaces: new Set<string>(),
  clusterObjects: new Set<string>(),
};

export function trackNamespace(name: string): void {
  created.namespaces.add(name);
}

/** A cluster-scoped object by its API path (e.g. a GatewayClass). */
export function trackClusterObject(path: string): void {
  created.clusterObjects.add(path);
}

/**
 * Removes what the file made: its releases first (their cleanup hooks remove the fleets while nothing is
 * terminating yet), then every namespace (the releases' too), then cluster objects. The namespaces finish
 * terminating while the next file runs: no two files share a namespace name.
 */
export async function cleanup(cluster: Cluster): Promise<void> {
  const releases = created.releases.splice(0).reverse();
  for (const release of releases) await release.uninstall();
  const namespaces = new Set([...created.namespaces, ...releases.map((r) => r.namespace)]);
  for (const ns of namespaces) await call(cluster, 'DELETE', `/api/v1/namespaces/${ns}`);
  for (const path of created.clusterObjects) await call(cluster, 'DELETE', path);
  created.namespaces.clear();
  created.clusterObjects.clear();
}

/** `helm install` into a fresh namespace; `set` holds `--set key=value` assignments. */
export async function install(
  cluster: Cluster,
  options: { release?: string; namespace?: string; set?: string[] } = {},
): Promise<Release> {
  const name = options.release ?? 'portico';
  const namespace = options.namespace ?? 'portico-gateway-system';
  const sets = (options.set ?? []).flatMap((s) => ['--set', s]);
  await restrictedNamespace(cluster, namespace);
  await helm(cluster, [
    'install',
    name,
    CHART,
    '-n',
    namespace,
    '--create-namespace',
    '--wait',
    '--timeout',
    '180s',
    ...sets,
  ]);
  let uninstalled = false;
  const release: Release = {
    name,
    namespace,
    async uninstall() {
      if (uninstalled) return;
      uninstalled = true;
      const installed = await helm(cluster, ['status', name, '-n', namespace]).then(
        () => true,
        () => false,
      );
      if (installed) await helm(cluster, ['uninstall', name, '-n', namespace, '--wait', '--timeout', '180s']);
    },
  };
  created.releases.push(release);
  return release;
}

/** The last lines of every container of the namespaces' pods (comma-separated), with times, for failures. */
export function namespaceLogs(cluster: Cluster, namespaces: string): string {
  return namespaces
    .split(',')
    .map((namespace) => {
      try {
        return cluster.kubectl([
          'logs',
          '-n',
          namespace,
          '--all-containers',
          '--prefix',
          '--timestamps',
          '--tail=300',
          '-l',
          'app.kubernetes.io/name',
        ]);
      } catch (error) {
        return (error as Error).message;
      }
    })
    .join('\n');
}

/** Names of the running, ready pods of the namespace matching the selector. */
export async function readyPods(cluster: Cluster, namespace: string, selector: string): Promise<string[]> {
  const reply = await call(
    cluster,
    'GET',
    `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(selector)}`,
  );
  return asList(reply.body.items)
    .filter(
      (p) =>
        p.metadata?.deletionTimestamp === undefined &&
        asList(p.status?.conditions).some((c) => c.type === 'Ready' && c.status === 'True'),
    )
    .map((p) => String(p.metadata?.name));
}

/**
 * The Kubernetes e2e files share one real cluster and the node's 2 cores: scripts/run-tests.mjs runs them in
 * a phase of their own, one file at a time, with PORTICO_E2E_KUBERNETES=1.
 */
export const E2E_ENABLED = process.env.PORTICO_E2E_KUBERNETES === '1';
export const E2E_SKIP: string | false = E2E_ENABLED ? false : 'set PORTICO_E2E_KUBERNETES=1 to run';

// What every Kubernetes e2e file does around its tests: lease the test cluster and set up on it before them;
// after them, print the pods' logs of the namespaces in E2E_LOGS (to diagnose a failure), remove what the file
// installed and hand the cluster back. Without PORTICO_E2E_KUBERNETES=1 it does nothing (the tests skip).
import { after, before } from 'node:test';
import type { Cluster } from '../../cluster/harness.js';
import { type ClusterLease, useCluster } from '../../cluster/shared.js';
import { cleanup, E2E_ENABLED, namespaceLogs } from './install.js';

/**
 * Registers the file's before and after hooks; `setUp` is handed the leased cluster and installs Portico and
 * whatever its tests need.
 */
export function kubernetesE2e(setUp: (cluster: Cluster) => Promise<void>): void {
  let lease: ClusterLease | undefined;
  before(async () => {
    if (!E2E_ENABLED) return;
    lease = await useCluster();
    await setUp(lease.cluster);
  });
  after(async () => {
    if (!E2E_ENABLED || lease === undefined) return;
    // E2E_LOGS=<namespace>[,<namespace>] (e.g. portico-gateway-system) prints its pods' logs.
    if (process.env.E2E_LOGS) console.log(namespaceLogs(lease.cluster, process.env.E2E_LOGS));
    await cleanup(lease.cluster);
    await lease.release();
  });
}

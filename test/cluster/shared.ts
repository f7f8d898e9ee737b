// The cluster a test file runs on: the one scripts/run-tests.mjs started for the whole Kubernetes phase
// (PORTICO_TEST_CLUSTER names its directory), or a cluster of its own when the file runs alone.
import { attachCluster, type Cluster, startCluster } from './harness.js';

export const CLUSTER_ENV = 'PORTICO_TEST_CLUSTER';

export interface ClusterLease {
  cluster: Cluster;
  /** Stops the cluster if this file started it; a shared one stays for the next file. */
  release(): Promise<void>;
}

export async function useCluster(): Promise<ClusterLease> {
  const shared = process.env[CLUSTER_ENV];
  if (shared !== undefined && shared !== '')
    return { cluster: attachCluster(shared), release: async () => {} };
  const cluster = await startCluster();
  return { cluster, release: () => cluster.stop() };
}

// The Gateway API CRDs of one release channel on the test cluster, which starts with the standard channel. The
// experimental channel keeps the fields of experimental features (a Gateway address's routability, listener
// filters), so only over it does a class claim them. v1.7's safe-upgrades admission policy refuses experimental
// CRDs over standard ones (its message says to remove it): its binding is away while the experimental CRDs are in,
// and back with the standard ones.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster } from './harness.js';
import { eventually } from './kube-api.js';

export type GatewayApiChannel = 'standard' | 'experimental';

const SAFE_UPGRADES = 'safe-upgrades.gateway.networking.k8s.io';
const SAFE_UPGRADES_FILE = 'gateway.networking.k8s.io_vap_safeupgrades.yaml';

function channelDir(cluster: Cluster, channel: GatewayApiChannel): string {
  const standard = cluster.toolchain.files.gatewayApiCrds;
  return channel === 'standard' ? standard : join(standard, '..', 'experimental');
}

/** The channel's CRD files (not the admission policy, nor the kustomization). */
function crdFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') && f !== SAFE_UPGRADES_FILE && f !== 'kustomization.yaml')
    .sort();
}

/**
 * Installs `files` of `channel` (default: all its CRDs; the standard channel then also removes the experimental
 * channel's own kinds) and waits until they are established.
 */
export async function installGatewayApiChannel(
  cluster: Cluster,
  channel: GatewayApiChannel,
  files?: string[],
): Promise<void> {
  const dir = channelDir(cluster, channel);
  const names = files ?? crdFiles(dir);
  const fileArgs = names.flatMap((name) => ['-f', join(dir, name)]);
  if (channel === 'experimental')
    cluster.kubectl(['delete', 'validatingadmissionpolicybinding', SAFE_UPGRADES, '--ignore-not-found']);
  // The API server's admission sees the binding gone a moment later: until then the policy still refuses.
  await eventually(
    async () => {
      try {
        cluster.kubectl(['apply', '--server-side', '--force-conflicts', ...fileArgs]);
        return true;
      } catch (error) {
        if (!String(error).includes(SAFE_UPGRADES)) throw error;
        return undefined;
      }
    },
    `the ${channel} Gateway API CRDs applied`,
    120_000,
    500,
  );
  if (channel === 'standard') {
    if (files === undefined) {
      const experimental = channelDir(cluster, 'experimental');
      for (const name of crdFiles(experimental).filter((n) => !names.includes(n)))
        cluster.kubectl(['delete', '--ignore-not-found', '-f', join(experimental, name)]);
    }
    cluster.kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(dir, SAFE_UPGRADES_FILE)]);
  }
  cluster.kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...fileArgs]);
}

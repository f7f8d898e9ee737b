// What taking and losing the leader lease does: a new leader re-checks all infrastructure and statuses, polls its peers
// for their proxies, and for a grace period counts the stored Programmed verdicts of proxies reconnecting.
import { performance } from 'node:perf_hooks';
import type { Runner } from '../../runner/runner.js';
import type { KubernetesControllerOptions } from './controller.js';
import type { InfraApplier } from './infra-applier.js';
import { type LeaderElection, leaseName, startLeaderElection } from './leader-election.js';
import type { ControllerMetrics } from './metrics.js';
import type { PeerDataPlane } from './peer-data-plane.js';
import type { ApiStatusSink } from './status-sink.js';

// Six of the discovery client's 10 s backoff caps: every proxy that is alive has reconnected by then.
const DEFAULT_RECONNECT_GRACE_MS = 60_000;

export interface Leadership {
  leader: LeaderElection;
  stop(): Promise<void>;
}

/** Leadership: a new leader re-checks all infrastructure and statuses, polls its peers, and grants the reconnect grace. */
export function startLeading(
  options: KubernetesControllerOptions,
  parts: {
    metrics: ControllerMetrics;
    infra: InfraApplier;
    statuses: Pick<ApiStatusSink, 'reset'>;
    peers: PeerDataPlane;
    runner: Runner;
  },
  grace: { endsAt: number },
): Leadership {
  const { metrics, infra, statuses, peers, runner } = parts;
  const reconnectGraceMs = options.reconnectGraceMs ?? DEFAULT_RECONNECT_GRACE_MS;
  let graceTimer: NodeJS.Timeout | undefined;
  const leader = startLeaderElection({
    client: options.client,
    namespace: options.controllerNamespace,
    name: leaseName(options.config.gateway.controllerName),
    identity: options.identity,
    leaseDurationSeconds: options.leaseDurationSeconds,
    retryMs: options.leaseRetryMs,
    log: options.log,
    onChange: (leading) => {
      metrics.leader = leading;
      if (graceTimer !== undefined) clearTimeout(graceTimer);
      graceTimer = undefined;
      if (leading) {
        infra.reset();
        statuses.reset();
        peers.start();
        grace.endsAt = performance.now() + reconnectGraceMs;
        // One more pass when the grace ends, so a fleet with no live proxy loses Programmed then.
        graceTimer = setTimeout(() => {
          graceTimer = undefined;
          runner.soon();
        }, reconnectGraceMs);
      } else peers.stop();
      runner.soon();
    },
  });
  return {
    leader,
    async stop() {
      if (graceTimer !== undefined) clearTimeout(graceTimer);
      await leader.stop();
    },
  };
}

// What taking and losing the leader lease does: a new leader re-checks all infrastructure and statuses, polls its peers
// for their proxies, and for a grace period counts the stored Programmed verdicts of proxies reconnecting.
import { performance } from 'node:perf_hooks';
import type { Logger } from '../../platform/log-line.js';
import type { Runner } from '../../runner/runner.js';
import type { ApiClient } from './api-client.js';
import type { InfraApplier } from './infra-applier.js';
import { type LeaderElection, leaseName, startLeaderElection } from './leader-election.js';
import type { ControllerMetrics } from './metrics.js';
import type { PeerDataPlane } from './peer-data-plane.js';
import type { ApiStatusSink } from './status-sink.js';

// Six of the discovery client's 10 s backoff caps: every proxy that is alive has reconnected by then.
const DEFAULT_RECONNECT_GRACE_MS = 60_000;

/** How this replica runs for the lease (part of the controller's options). */
export interface LeaseOptions {
  /** This replica's name in the leader lease (the pod name). */
  identity: string;
  leaseDurationSeconds?: number;
  leaseRetryMs?: number;
  /** How long after taking the lease a stored Programmed=True stands in for proxies still reconnecting. */
  reconnectGraceMs?: number;
}

export interface LeadershipOptions extends LeaseOptions {
  client: ApiClient;
  controllerNamespace: string;
  controllerName: string;
  log: Logger;
}

/** What a change of leader resets or wakes. */
export interface LeadershipParts {
  metrics: ControllerMetrics;
  infra: Pick<InfraApplier, 'reset'>;
  statuses: Pick<ApiStatusSink, 'reset'>;
  peers: Pick<PeerDataPlane, 'start' | 'stop'>;
  runner: Pick<Runner, 'soon'>;
}

export interface Leadership {
  /** False until `run` and until the lease is taken. */
  isLeader(): boolean;
  /** Until this time (performance.now()) the stored Programmed verdicts hold; afterwards only live Acks count. */
  graceEndsAt(): number;
  /** Runs for the lease from now on; taking or losing it resets and wakes `parts`. */
  run(parts: LeadershipParts): void;
  stop(): Promise<void>;
}

/** Leadership, not yet running for the lease: the parts it resets exist only after the parts that ask it. */
export function createLeadership(options: LeadershipOptions): Leadership {
  const reconnectGraceMs = options.reconnectGraceMs ?? DEFAULT_RECONNECT_GRACE_MS;
  let graceEndsAt = 0;
  let graceTimer: NodeJS.Timeout | undefined;
  let election: LeaderElection | undefined;

  function changed(parts: LeadershipParts, leading: boolean): void {
    const { metrics, infra, statuses, peers, runner } = parts;
    metrics.leader = leading;
    if (graceTimer !== undefined) clearTimeout(graceTimer);
    graceTimer = undefined;
    if (leading) {
      infra.reset();
      statuses.reset();
      peers.start();
      graceEndsAt = performance.now() + reconnectGraceMs;
      // One more pass when the grace ends, so a fleet with no live proxy loses Programmed then.
      graceTimer = setTimeout(() => {
        graceTimer = undefined;
        runner.soon();
      }, reconnectGraceMs);
    } else peers.stop();
    runner.soon();
  }

  return {
    isLeader: () => election?.isLeader() === true,
    graceEndsAt: () => graceEndsAt,
    run(parts) {
      election = startLeaderElection({
        client: options.client,
        namespace: options.controllerNamespace,
        name: leaseName(options.controllerName),
        identity: options.identity,
        leaseDurationSeconds: options.leaseDurationSeconds,
        retryMs: options.leaseRetryMs,
        log: options.log,
        onChange: (leading) => changed(parts, leading),
      });
    },
    async stop() {
      if (graceTimer !== undefined) clearTimeout(graceTimer);
      await election?.stop();
    },
  };
}

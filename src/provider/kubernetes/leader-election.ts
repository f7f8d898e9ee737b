// Leader election on a coordination.k8s.io Lease: acquire when free or expired, renew while held, release on
// stop so a successor takes over at once. Only the leader writes status and infrastructure.
import type { ApiClient, JsonObject } from './api-client.js';

export interface LeaderElectionOptions {
  client: ApiClient;
  namespace: string;
  name: string;
  identity: string;
  /** Default 15 s: how long a silent leader keeps the lease. */
  leaseDurationSeconds?: number;
  /** Default 2 s. */
  retryMs?: number;
  onChange(leading: boolean): void;
  log(line: string): void;
}

export interface LeaderElection {
  isLeader(): boolean;
  stop(): Promise<void>;
}

const STOP_WAIT_MS = 5000;

/** A controller name as a valid object name: lowercase, [a-z0-9.-], alphanumeric at both ends, ≤ 253. */
export function leaseName(controllerName: string): string {
  const cleaned = controllerName
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
  return cleaned.slice(0, 253).replace(/[^a-z0-9]+$/, '') || 'portico-gateway';
}

function microTime(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '000Z');
}

export function startLeaderElection(options: LeaderElectionOptions): LeaderElection {
  const duration = options.leaseDurationSeconds ?? 15;
  const retryMs = options.retryMs ?? 2000;
  const path = `/apis/coordination.k8s.io/v1/namespaces/${options.namespace}/leases`;
  let leading = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  // The attempt under way: stop() waits for it, so a renewal in flight cannot re-take the lease after release.
  let inflight: Promise<void> = Promise.resolve();
  let tookAfterStop = false;

  function setLeading(value: boolean): void {
    if (value === leading) return;
    leading = value;
    options.log(value ? `leader: acquired lease ${options.name}` : `leader: lost lease ${options.name}`);
    options.onChange(value);
  }

  /** The outcome of a create or update: after stop() it is only remembered, for the release. */
  function settle(held: boolean): void {
    if (stopped) tookAfterStop ||= held;
    else setLeading(held);
  }

  function spec(acquireTime: string | undefined, transitions: number): JsonObject {
    const now = microTime(Date.now());
    return {
      holderIdentity: options.identity,
      leaseDurationSeconds: duration,
      acquireTime: acquireTime ?? now,
      renewTime: now,
      leaseTransitions: transitions,
    };
  }

  async function attempt(): Promise<void> {
    const current = await options.client.request('GET', `${path}/${options.name}`);
    if (stopped) return;
    if (current.status === 404) {
      const created = await options.client.request('POST', path, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: options.name, namespace: options.namespace },
        spec: spec(undefined, 0),
      });
      settle(created.status === 201 || created.status === 200);
      return;
    }
    if (current.status !== 200) throw new Error(`get lease: HTTP ${current.status}`);
    const lease = current.body;
    const s = (lease.spec ?? {}) as {
      holderIdentity?: string;
      renewTime?: string;
      leaseDurationSeconds?: number;
      acquireTime?: string;
      leaseTransitions?: number;
    };
    const ours = s.holderIdentity === options.identity;
    const renewed = s.renewTime === undefined ? 0 : Date.parse(s.renewTime);
    const expired =
      s.holderIdentity === undefined ||
      s.holderIdentity === '' ||
      renewed + (s.leaseDurationSeconds ?? duration) * 1000 < Date.now();
    if (!ours && !expired) {
      setLeading(false);
      return;
    }
    const transitions = (s.leaseTransitions ?? 0) + (ours ? 0 : 1);
    const updated = await options.client.request('PUT', `${path}/${options.name}`, {
      ...lease,
      spec: spec(ours ? s.acquireTime : undefined, transitions),
    });
    settle(updated.status === 200);
  }

  async function tick(): Promise<void> {
    try {
      await attempt();
    } catch (error) {
      options.log(`leader: ${(error as Error).message}`);
      // Unable to renew: stop acting as leader before the lease can pass to someone else.
      setLeading(false);
    }
    if (!stopped) {
      timer = setTimeout(() => {
        inflight = tick();
      }, retryMs);
    }
  }
  inflight = tick();

  return {
    isLeader: () => leading,
    async stop() {
      stopped = true;
      const wasLeading = leading;
      if (timer !== undefined) clearTimeout(timer);
      // Bounded: an API server that does not answer must not hold up shutdown for the whole grace period.
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([inflight, new Promise((r) => (bound = setTimeout(r, STOP_WAIT_MS)))]);
      clearTimeout(bound);
      if (!wasLeading && !leading && !tookAfterStop) return;
      setLeading(false);
      // Release: an empty holder lets another replica acquire without waiting for expiry. Checked against the
      // stored Lease, not `leading`: a write that was in flight when stop() came may have taken it meanwhile.
      const current = await options.client.request('GET', `${path}/${options.name}`).catch(() => undefined);
      const lease = current?.body;
      const spec = (lease?.spec ?? {}) as JsonObject;
      if (lease === undefined || spec.holderIdentity !== options.identity) return;
      await options.client
        .request('PUT', `${path}/${options.name}`, { ...lease, spec: { ...spec, holderIdentity: '' } })
        .catch(() => undefined);
    },
  };
}

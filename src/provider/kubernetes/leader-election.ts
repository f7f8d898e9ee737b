// Leader election on a coordination.k8s.io Lease: acquire when free or expired, renew while held, release on
// stop so a successor takes over at once. Only the leader writes status and infrastructure.

import { PorticoError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log-line.js';
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
  log: Logger;
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

interface LeaseSpec {
  holderIdentity?: string;
  renewTime?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  leaseTransitions?: number;
}

/** The spec `identity` writes when it takes or renews the lease: renewed now, acquired now unless given. */
function heldSpec(
  identity: string,
  durationSeconds: number,
  acquireTime: string | undefined,
  transitions: number,
): JsonObject {
  const now = microTime(Date.now());
  return {
    holderIdentity: identity,
    leaseDurationSeconds: durationSeconds,
    acquireTime: acquireTime ?? now,
    renewTime: now,
    leaseTransitions: transitions,
  };
}

/** Whether `identity` holds the lease already, and whether its holder (if any) let it expire. */
function holding(
  spec: LeaseSpec,
  identity: string,
  durationSeconds: number,
): { ours: boolean; expired: boolean } {
  const renewed = spec.renewTime === undefined ? 0 : Date.parse(spec.renewTime);
  const expired =
    spec.holderIdentity === undefined ||
    spec.holderIdentity === '' ||
    renewed + (spec.leaseDurationSeconds ?? durationSeconds) * 1000 < Date.now();
  return { ours: spec.holderIdentity === identity, expired };
}

/**
 * Empties the holder, so another replica acquires without waiting for expiry. Checked against the stored Lease,
 * not against what this replica believes: a write that was in flight at stop may have taken it meanwhile.
 */
async function releaseLease(client: ApiClient, leasePath: string, identity: string): Promise<void> {
  const current = await client.request('GET', leasePath).catch(() => undefined);
  const lease = current?.body;
  const spec = (lease?.spec ?? {}) as JsonObject;
  if (lease === undefined || spec.holderIdentity !== identity) return;
  await client
    .request('PUT', leasePath, { ...lease, spec: { ...spec, holderIdentity: '' } })
    .catch(() => undefined);
}

function leasesPath(namespace: string): string {
  return `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
}

/**
 * One try to take the lease (free or expired) or renew it (ours): whether it is held afterwards; undefined when
 * `stopped()` came while the Lease was read, then nothing was written.
 */
async function tryToHold(
  options: LeaderElectionOptions,
  duration: number,
  stopped: () => boolean,
): Promise<boolean | undefined> {
  const { client, identity } = options;
  const leasePath = `${leasesPath(options.namespace)}/${options.name}`;
  const current = await client.request('GET', leasePath);
  if (stopped()) return undefined;
  if (current.status === 404) {
    const created = await client.request('POST', leasesPath(options.namespace), {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: options.name, namespace: options.namespace },
      spec: heldSpec(identity, duration, undefined, 0),
    });
    return created.status === 201 || created.status === 200;
  }
  if (current.status !== 200) throw new PorticoError('E_KUBERNETES', `get lease: HTTP ${current.status}`);
  const lease = current.body;
  const s = (lease.spec ?? {}) as LeaseSpec;
  const { ours, expired } = holding(s, identity, duration);
  if (!ours && !expired) return false;
  const transitions = (s.leaseTransitions ?? 0) + (ours ? 0 : 1);
  const updated = await client.request('PUT', leasePath, {
    ...lease,
    spec: heldSpec(identity, duration, ours ? s.acquireTime : undefined, transitions),
  });
  return updated.status === 200;
}

/** Waits for `promise`, but no longer than `ms`. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let bound: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((r) => (bound = setTimeout(r, ms)))]);
  clearTimeout(bound);
}

export function startLeaderElection(options: LeaderElectionOptions): LeaderElection {
  const duration = options.leaseDurationSeconds ?? 15;
  const retryMs = options.retryMs ?? 2000;
  const leasePath = `${leasesPath(options.namespace)}/${options.name}`;
  let leading = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  // The attempt under way: stop() waits for it, so a renewal in flight cannot re-take the lease after release.
  let inflight: Promise<void> = Promise.resolve();
  let tookAfterStop = false;

  function setLeading(value: boolean): void {
    if (value === leading) return;
    leading = value;
    options.log.info(value ? `leader: acquired lease ${options.name}` : `leader: lost lease ${options.name}`);
    options.onChange(value);
  }

  /** The outcome of a create or update: after stop() it is only remembered, for the release. */
  function settle(held: boolean): void {
    if (stopped) tookAfterStop ||= held;
    else setLeading(held);
  }

  async function attempt(): Promise<void> {
    const held = await tryToHold(options, duration, () => stopped);
    if (held !== undefined) settle(held);
  }

  async function tick(): Promise<void> {
    try {
      await attempt();
    } catch (error) {
      options.log.warn(`leader: ${(error as Error).message}`);
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
      await settledWithin(inflight, STOP_WAIT_MS);
      if (!wasLeading && !leading && !tookAfterStop) return;
      setLeading(false);
      await releaseLease(options.client, leasePath, options.identity);
    },
  };
}

// A proxy with several workers: the primary process forks them (node:cluster), feeds each the fleet config
// (a delta once it has one), answers for them all (one readiness, one drain, one metrics endpoint) and
// restarts a worker that dies. To the discovery client it is one proxy: apply resolves once every worker
// applied, and fails if any refused.

import type { ApplyOutcome } from '../../ir/apply-outcome.js';
import type { FleetConfig } from '../../ir/fleet-config.js';
import {
  type FleetConfigChange,
  type FleetConfigDelta,
  findByName,
  fleetConfigDelta,
} from '../../ir/fleet-config-patch.js';
import { type BackoffTimings, backoffDelay } from '../../platform/backoff.js';
import { family } from '../../platform/prometheus-text.js';
import { type AdminView, type SideServer, sideServerAddress, startSideServers } from '../admin.js';
import { BucketTable } from '../limits/rate-store.js';
import { type ReconfigureOutcome, type RuntimeSettings, setProcessSettings } from '../live-settings.js';
import { type ProxyOptions, type ProxyOptionsInput, resolveProxyOptions } from '../options.js';
import { createProxy, type Proxy as PorticoProxy } from '../proxy.js';
import { emptyMetrics, type MetricsSnapshot, mergeMetrics, renderMetrics } from '../telemetry/metrics.js';
import type { AcceptBalancing, FromWorker, WorkerSettings, WorkerStats } from './protocol.js';
import { forkWorker, type WorkerSlot } from './worker-slot.js';

/** A worker that does not answer a stats request within this is reported as not live. */
const STATS_TIMEOUT_MS = 2_000;
/** A worker that dies within this of its start counts toward a crash loop. */
const YOUNG_MS = 10_000;
/** A crash loop's restarts: 100 ms after the second quick death, doubling to 5 s. */
const RESTART_BACKOFF: BackoffTimings = { firstMs: 100, maxMs: 5_000 };
/** The least a worker let go by a smaller worker count keeps answering before it closes idle connections. */
const RETIRE_DRAIN_MS = 1_000;
/** After a drain's maximum, workers still running are killed. */
const DRAIN_GRACE_MS = 5_000;

/** SO_REUSEPORT listening arrived in Node 22.12 and 23.1; before, the primary hands out connections. */
export function bestAcceptBalancing(version = process.versions.node): AcceptBalancing {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 12) ? 'reuse-port' : 'round-robin';
}

export interface WorkerProxyOptions extends ProxyOptionsInput {
  workers: number;
  /** Default: the best the running Node offers (bestAcceptBalancing). */
  balancing?: AcceptBalancing;
  /** Workers append stage timestamps to this file: the `trace` hook cannot cross into their processes. */
  traceEvents?: string;
}

/** Everything the primary knows about its workers. */
interface Pool {
  options: ProxyOptions;
  settings: WorkerSettings;
  /** In place order: a replacement takes the place of the worker it replaces (the `worker` label of metrics). */
  slots: WorkerSlot[];
  /** Workers let go by a smaller worker count, finishing their requests: counted once they exit, not replaced. */
  retiring: Set<WorkerSlot>;
  nextId: number;
  /** The config every worker applied last, for a replacement. */
  current: { config: FleetConfig; version: string | undefined; appliedAt: string } | undefined;
  /** Applies and catch-ups run one at a time, in order. */
  queue: Promise<unknown>;
  draining: boolean;
  drained: boolean;
  closed: boolean;
  restarts: number;
  /** Workers in a row that died young. */
  crashLoop: number;
  /** The counters of workers that died, as last reported (gauges left out: their connections are gone). */
  retired: MetricsSnapshot;
  /** The primary's admin, metrics and readiness servers. */
  sideServers: SideServer[];
  /** Local rate limits' token buckets for the whole proxy: its workers lease from them. */
  buckets: BucketTable;
}

/** One worker serves in this process, as a proxy always did; more are processes under this one. */
export function createProxyWithWorkers(input: WorkerProxyOptions): PorticoProxy {
  return input.workers <= 1 ? createProxy(input) : createWorkerProxy(input);
}

export function createWorkerProxy(input: WorkerProxyOptions): PorticoProxy {
  const options = resolveProxyOptions(input);
  const pool = createPool(options, input.balancing ?? bestAcceptBalancing(), input.traceEvents);
  let drainPromise: Promise<void> | undefined;

  const proxy: PorticoProxy = {
    get ready() {
      return pool.current !== undefined && !pool.draining;
    },
    get started() {
      return started;
    },
    apply(config, version, change) {
      return enqueue(pool, () => applyToAll(pool, config as FleetConfig, version, change));
    },
    drain(drainOptions = {}) {
      drainPromise ??= drainWorkers(
        pool,
        drainOptions.drainMs ?? options.drainMs,
        drainOptions.maxMs ?? options.maxDrainMs,
      );
      return drainPromise;
    },
    close: () => closeWorkers(pool),
    reconfigure: (settings) => enqueue(pool, () => reconfigureWorkers(pool, settings)),
    addresses() {
      return [
        ...(pool.slots[0]?.addresses ?? []),
        ...pool.sideServers.map((s) => ({ listener: s.name, ...sideServerAddress(s) })),
      ];
    },
  };
  const started = startWorkers(pool, proxy, input.workers);
  started.catch(() => undefined); // reported through `started`
  return proxy;
}

function createPool(
  options: ProxyOptions,
  balancing: AcceptBalancing,
  traceEvents: string | undefined,
): Pool {
  const log = options.accessLog;
  return {
    options,
    buckets: new BucketTable(() => performance.now()),
    settings: {
      bindAddress: options.bindAddress,
      limits: options.limits,
      http2: options.http2,
      portOffset: options.portOffset,
      drainMs: options.drainMs,
      maxDrainMs: options.maxDrainMs,
      balancing,
      layer4Relay: options.layer4Relay,
      // The settings cross to the workers as JSON: a writer given in-process stays behind (workers use stdout).
      ...(log === undefined
        ? {}
        : {
            accessLog: {
              format: log.format,
              fields: log.fields,
              sampling: log.sampling,
              ...(log.redactQuery === undefined ? {} : { redactQuery: log.redactQuery }),
            },
          }),
      ...(traceEvents === undefined ? {} : { traceEvents }),
      // Each worker exports its own requests' spans (plain data: it crosses as JSON).
      ...(options.tracing === undefined ? {} : { tracing: options.tracing }),
    },
    slots: [],
    retiring: new Set(),
    nextId: 1,
    current: undefined,
    queue: Promise.resolve(),
    draining: false,
    drained: false,
    closed: false,
    restarts: 0,
    crashLoop: 0,
    retired: emptyMetrics(),
    sideServers: [],
  };
}

/** The primary's own ports first (a proxy that cannot have them exits 98 before it forks), then the workers. */
async function startWorkers(pool: Pool, proxy: PorticoProxy, workers: number): Promise<void> {
  const { options } = pool;
  pool.sideServers = await startSideServers(poolView(pool, proxy), {
    admin: options.adminAddress,
    metrics: options.metricsAddress,
    ready: options.readyAddress,
  });
  for (let i = 0; i < Math.max(1, workers); i++) fork(pool, i);
  try {
    await Promise.all(pool.slots.map((s) => s.started));
  } catch (error) {
    // Left running, the workers' IPC channels would keep this process from ever exiting.
    await proxy.close();
    throw error;
  }
  options.log.info(`${pool.slots.length} workers (${pool.settings.balancing} accept balancing)`);
}

/** Immediate: every worker killed, the primary's ports closed. */
async function closeWorkers(pool: Pool): Promise<void> {
  pool.closed = true;
  pool.draining = true;
  const all = [...pool.slots, ...pool.retiring];
  const exits = all.map((slot) => new Promise<void>((resolve) => slot.worker.once('exit', () => resolve())));
  for (const slot of all) slot.worker.process.kill('SIGKILL');
  for (const s of pool.sideServers) s.server.close();
  pool.sideServers = [];
  await Promise.all(exits);
}

function enqueue<T>(pool: Pool, work: () => Promise<T>): Promise<T> {
  const next = pool.queue.then(work);
  pool.queue = next.catch(() => undefined);
  return next;
}

/** Starts a worker in place `index`. */
function fork(pool: Pool, index: number): WorkerSlot {
  const slot = forkWorker(
    pool.settings,
    pool.options.log,
    (gone, code, signal) => onExit(pool, gone, code, signal),
    pool.buckets,
  );
  pool.slots.splice(index, 0, slot);
  return slot;
}

/**
 * A worker exited: its counters are kept, and unless the proxy is stopping, a new worker takes its place with
 * the current config — at once, or after a delay that doubles (up to 5 s) while workers keep dying young.
 */
function onExit(pool: Pool, slot: WorkerSlot, code: number | null, signal: string | null): void {
  const index = pool.slots.indexOf(slot);
  const retiring = pool.retiring.delete(slot);
  if (index < 0 && !retiring) return;
  if (index >= 0) pool.slots.splice(index, 1);
  if (slot.last !== undefined) {
    pool.retired = mergeMetrics([pool.retired, { ...slot.last, connections: [], inFlight: 0 }]);
  }
  if (retiring || pool.draining || pool.closed) return;
  pool.restarts++;
  pool.crashLoop = Date.now() - slot.forkedAt < YOUNG_MS ? pool.crashLoop + 1 : 0;
  const delayMs = pool.crashLoop === 0 ? 0 : backoffDelay(pool.crashLoop, RESTART_BACKOFF);
  pool.options.log.warn(
    `worker ${slot.worker.id} exited (${signal ?? code}); starting another${delayMs > 0 ? ` in ${delayMs} ms` : ''}`,
  );
  const replace = (): void => {
    if (pool.draining || pool.closed) return;
    const next = fork(pool, Math.min(index, pool.slots.length));
    void enqueue(pool, () => catchUp(pool, next)).catch(() => undefined);
  };
  if (delayMs === 0) replace();
  else setTimeout(replace, delayMs).unref();
}

/** What a worker that applied `sent` needs to reach `config`: from `change` when it starts there, else compared. */
function workerDelta(
  sent: FleetConfig,
  config: FleetConfig,
  change: FleetConfigChange | undefined,
): FleetConfigDelta {
  if (change === undefined || change.since !== sent || change.config !== config)
    return fleetConfigDelta(sent, config);
  const changed: FleetConfigDelta['changed'] = [];
  for (const { type, name } of change.changed) {
    const value = findByName(config[type] as readonly { name: string }[], name);
    if (value !== undefined) changed.push({ type, name, value });
  }
  return { changed, removed: change.removed };
}

/** Sends `config` to one worker, whole or as a delta from what it applied last. */
async function applyTo(
  pool: Pool,
  slot: WorkerSlot,
  config: FleetConfig,
  version: string | undefined,
  change?: FleetConfigChange,
): Promise<ApplyOutcome> {
  await slot.started;
  const id = pool.nextId++;
  const reply = await slot.request(
    slot.sent === undefined
      ? { type: 'apply', id, version, full: config }
      : { type: 'apply', id, version, delta: workerDelta(slot.sent, config, change) },
    (reason): FromWorker => ({ type: 'applied', id, outcome: { ok: false, error: reason }, addresses: [] }),
  );
  if (reply.type !== 'applied') return { ok: false, error: 'unexpected reply from a worker' };
  slot.sent = reply.outcome.ok ? config : undefined;
  if (reply.outcome.ok) slot.addresses = reply.addresses;
  return reply.outcome;
}

async function applyToAll(
  pool: Pool,
  config: FleetConfig,
  version: string | undefined,
  change?: FleetConfigChange,
): Promise<ApplyOutcome> {
  if (pool.draining) return { ok: false, error: 'proxy is draining' };
  const targets = [...pool.slots];
  const outcomes = await Promise.all(
    targets.map((slot) =>
      applyTo(pool, slot, config, version, change).catch(
        (error: unknown): ApplyOutcome => ({ ok: false, error: (error as Error).message }),
      ),
    ),
  );
  const refused = outcomes.findIndex((o) => !o.ok);
  if (refused >= 0) {
    const o = outcomes[refused] as { ok: false; error: string };
    return { ok: false, error: `worker ${targets[refused]?.worker.id}: ${o.error}` };
  }
  pool.current = { config, version, appliedAt: new Date().toISOString() };
  return mergeOutcomes(outcomes as Extract<ApplyOutcome, { ok: true }>[]);
}

/**
 * New settings while serving: the primary's log level and drain times at once, each worker's access log and
 * tracing by message (and a new worker's from its settings), then as many workers as asked — new ones get the
 * current config before this resolves; ones let go stop accepting and finish their requests in their own time.
 */
async function reconfigureWorkers(pool: Pool, settings: RuntimeSettings): Promise<ReconfigureOutcome> {
  if (pool.draining) return { ok: false, error: 'proxy is draining' };
  const { options } = pool;
  setProcessSettings(options, settings);
  pool.settings = {
    ...pool.settings,
    drainMs: settings.drainMs,
    maxDrainMs: settings.maxDrainMs,
    accessLog: settings.accessLog,
    tracing: settings.tracing,
  };
  const replies = await Promise.all(
    pool.slots.map((slot) => {
      const id = pool.nextId++;
      // A worker gone meanwhile is replaced with the new settings: that is not a refusal.
      const gone = (): FromWorker => ({ type: 'reconfigured', id, outcome: { ok: true } });
      return slot.request({ type: 'settings', id, settings }, gone);
    }),
  );
  for (const reply of replies) {
    if (reply.type === 'reconfigured' && !reply.outcome.ok) return reply.outcome;
  }
  await resizeWorkers(pool, settings.workers);
  return { ok: true };
}

/** Lets the last workers go, or adds workers that serve the current config before this resolves. */
async function resizeWorkers(pool: Pool, workers: number): Promise<void> {
  const leaving = pool.slots.splice(Math.max(1, workers));
  // A worker let go answers a while longer with `connection: close`, so the clients of its busy keep-alive
  // connections move on between requests, before it closes the idle ones (which races with a request sent then).
  const drainMs = Math.max(RETIRE_DRAIN_MS, pool.options.drainMs);
  for (const slot of leaving) {
    pool.retiring.add(slot);
    const drain = { type: 'drain' as const, drainMs, maxMs: drainMs + pool.options.maxDrainMs };
    slot.worker.send(drain, undefined, undefined, () => {});
  }
  const added: WorkerSlot[] = [];
  while (pool.slots.length < workers) added.push(fork(pool, pool.slots.length));
  if (leaving.length + added.length > 0)
    pool.options.log.info(`${pool.slots.length} workers (${added.length} added, ${leaving.length} let go)`);
  await Promise.all(added.map((slot) => catchUp(pool, slot)));
}

/**
 * A new worker (a replacement, or one more), once it started, gets the config the others serve, if they serve
 * one yet. One that exits before it starts gets nothing: it is replaced, as any dead worker is (onExit).
 */
async function catchUp(pool: Pool, slot: WorkerSlot): Promise<void> {
  const started = await slot.started.then(
    () => true,
    () => false,
  );
  if (started && pool.current !== undefined)
    await applyTo(pool, slot, pool.current.config, pool.current.version);
}

/** Every worker's counts and liveness, asked now; a silent worker's last counts stand, and it is not live. */
function workerStats(pool: Pool): Promise<WorkerStats[]> {
  return Promise.all(
    pool.slots.map(async (slot) => {
      const id = pool.nextId++;
      const unanswered = (reason: string): FromWorker => ({
        type: 'stats',
        id,
        stats: { metrics: slot.last ?? emptyMetrics(), notLive: reason },
      });
      const reply = await slot.request({ type: 'stats', id }, unanswered, STATS_TIMEOUT_MS);
      const answer = reply.type === 'stats' ? reply.stats : { metrics: emptyMetrics(), notLive: 'bad reply' };
      slot.last = answer.metrics;
      return answer;
    }),
  );
}

async function drainWorkers(pool: Pool, drainMs: number, maxMs: number): Promise<void> {
  pool.draining = true;
  pool.options.onDraining?.();
  pool.options.log.info(
    `draining ${pool.slots.length} workers: serving ${drainMs} ms more, then up to ${maxMs} ms in flight`,
  );
  const slots = [...pool.slots];
  // Workers already let go finish too before the proxy is drained.
  const exits = [...slots, ...pool.retiring].map(
    (slot) => new Promise<void>((resolve) => slot.worker.once('exit', () => resolve())),
  );
  for (const slot of slots) {
    // A worker whose channel is already closed is exiting anyway.
    slot.worker.send({ type: 'drain', drainMs, maxMs }, undefined, undefined, () => {});
  }
  const late = setTimeout(() => {
    for (const slot of [...slots, ...pool.retiring]) slot.worker.process.kill('SIGKILL');
  }, maxMs + DRAIN_GRACE_MS);
  await Promise.all(exits);
  clearTimeout(late);
  pool.drained = true;
  pool.options.log.info('drained');
}

/** What the admin, metrics and readiness servers show: the workers as one proxy. */
function poolView(pool: Pool, proxy: PorticoProxy): AdminView {
  return {
    get ready() {
      return proxy.ready;
    },
    get draining() {
      return pool.draining;
    },
    get drained() {
      return pool.drained;
    },
    async notLive() {
      if (pool.drained) return 'drained: its listeners are closed';
      if (pool.draining) return undefined;
      return (await workerStats(pool)).find((s) => s.notLive !== undefined)?.notLive;
    },
    config: () => pool.current?.config,
    version: () =>
      pool.current === undefined
        ? undefined
        : { version: pool.current.version ?? '', appliedAt: pool.current.appliedAt },
    inFlight: async () => (await workerStats(pool)).reduce((n, s) => n + s.metrics.inFlight, 0),
    startDrain: () => void proxy.drain(),
    reconfigure: (settings) => proxy.reconfigure(settings),
    maxWorkers: pool.options.maxWorkers,
    metrics: async () => {
      const each = (await workerStats(pool)).map((s) => s.metrics);
      const serving = pool.slots.filter((slot) => slot.sent !== undefined).length;
      return `${renderMetrics(mergeMetrics([pool.retired, ...each]))}${workerLines(each, serving, pool.restarts)}`;
    },
  };
}

/** Every worker applied: listener errors and rejected resources once each (workers validate alike). */
function mergeOutcomes(outcomes: Extract<ApplyOutcome, { ok: true }>[]): ApplyOutcome {
  const listenerErrors = new Map<string, { listener: string; message: string }>();
  const rejected = new Map<string, NonNullable<Extract<ApplyOutcome, { ok: true }>['rejected']>[number]>();
  for (const o of outcomes) {
    for (const e of o.listenerErrors) listenerErrors.set(`${e.listener}\u0000${e.message}`, e);
    for (const r of o.rejected ?? []) rejected.set(`${r.type}\u0000${r.name}`, r);
  }
  const merged = { ok: true as const, listenerErrors: [...listenerErrors.values()] };
  return rejected.size === 0 ? merged : { ...merged, rejected: [...rejected.values()] };
}

/** The primary's own series: workers, restarts, and each worker's accepted connections (the spread). */
export function workerLines(each: MetricsSnapshot[], serving: number, restarts: number): string {
  return [
    ...family(
      'portico_proxy_workers',
      'gauge',
      'Worker processes serving a config (a replacement counts once it applied one).',
      [[undefined, serving]],
    ),
    ...family('portico_proxy_worker_restarts_total', 'counter', 'Workers that died and were replaced.', [
      [undefined, restarts],
    ]),
    ...family(
      'portico_proxy_worker_connections_total',
      'counter',
      'Connections accepted, by worker (its place, 0 to workers-1).',
      each.map((m, i) => [{ worker: String(i) }, m.accepted] as const),
    ),
    '',
  ].join('\n');
}

// A proxy with several workers: the primary process forks them (node:cluster), feeds each the fleet config
// (a delta once it has one), answers for them all (one readiness, one drain, one metrics endpoint) and
// restarts a worker that dies. To the discovery client it is one proxy: apply resolves once every worker
// applied, and fails if any refused.
import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import type { FleetConfig } from '../../ir/fleet-config.js';
import { fleetConfigDelta } from '../../ir/fleet-config-patch.js';
import { type AdminView, type SideServer, sideServerAddress, startSideServers } from '../admin.js';
import { type MetricsSnapshot, mergeMetrics, renderMetrics } from '../metrics.js';
import { type ProxyOptionsInput, resolveProxyOptions } from '../options.js';
import { type ApplyOutcome, createProxy, type Proxy as PorticoProxy } from '../proxy.js';
import type { AcceptBalancing, FromWorker, ToWorker, WorkerSettings, WorkerStats } from './protocol.js';
import { WORKER_SETTINGS_ENV } from './worker.js';

/** A worker that does not answer a stats request within this is reported as not live. */
const STATS_TIMEOUT_MS = 2_000;
/** A worker that dies within this of its start counts toward a crash loop. */
const YOUNG_MS = 10_000;
const MAX_RESTART_DELAY_MS = 5_000;
/** After a drain's maximum, workers still running are killed. */
const DRAIN_GRACE_MS = 5_000;

/** SO_REUSEPORT listening arrived in Node 22.12 and 23.1; before, the primary hands out connections. */
export function bestAcceptBalancing(version = process.versions.node): AcceptBalancing {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 12) ? 'reuse-port' : 'round-robin';
}

interface Slot {
  worker: Worker;
  started: Promise<void>;
  /** What this worker applied last: the next update is a delta from it (undefined: send the whole config). */
  sent: FleetConfig | undefined;
  addresses: { listener: string; port: number; address: string }[];
  replies: Map<number, (message: FromWorker) => void>;
  /** Its counts as last reported: what stays counted if it dies (counters never go back). */
  last: MetricsSnapshot | undefined;
  forkedAt: number;
}

export interface WorkerProxyOptions extends ProxyOptionsInput {
  workers: number;
  /** Default: the best the running Node offers (bestAcceptBalancing). */
  balancing?: AcceptBalancing;
}

/** The worker entry: the compiled .js next to this file, or the .ts source when run from source (tests, tsx). */
function workerEntry(): string {
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return fileURLToPath(new URL(`./worker${ext}`, import.meta.url));
}

export function createWorkerProxy(input: WorkerProxyOptions): PorticoProxy {
  const options = resolveProxyOptions(input);
  const settings: WorkerSettings = {
    bindAddress: options.bindAddress,
    portOffset: options.portOffset,
    drainMs: options.drainMs,
    maxDrainMs: options.maxDrainMs,
    balancing: input.balancing ?? bestAcceptBalancing(),
  };
  cluster.schedulingPolicy = cluster.SCHED_RR;
  cluster.setupPrimary({ exec: workerEntry(), serialization: 'advanced' });
  const slots: Slot[] = [];
  let nextId = 1;
  let current: { config: FleetConfig; version: string | undefined; appliedAt: string } | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  let draining = false;
  let drained = false;
  let closed = false;
  let restarts = 0;
  /** Workers in a row that died young. */
  let crashLoop = 0;
  /** The counters of workers that died, as last reported (gauges left out: their connections are gone). */
  let retired: MetricsSnapshot = emptyMetrics();
  let drainPromise: Promise<void> | undefined;
  let sideServers: SideServer[] = [];
  let started: Promise<void> = Promise.resolve();

  const request = (slot: Slot, message: ToWorker & { id: number }, timeoutMs?: number) =>
    new Promise<FromWorker>((resolve) => {
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              slot.replies.delete(message.id);
              resolve({ type: 'stats', id: message.id, stats: unanswered(slot) });
            }, timeoutMs);
      slot.replies.set(message.id, (reply) => {
        if (timer !== undefined) clearTimeout(timer);
        resolve(reply);
      });
      slot.worker.send(message);
    });

  const unanswered = (slot: Slot): WorkerStats => ({
    metrics: slot.last ?? emptyMetrics(),
    notLive: `worker ${slot.worker.id} does not answer`,
  });

  /** Starts a worker in place `index` (a replacement keeps the place of the one it replaces). */
  function fork(index: number): Slot {
    const worker = cluster.fork({ [WORKER_SETTINGS_ENV]: JSON.stringify(settings) });
    const slot: Slot = {
      worker,
      started: Promise.resolve(),
      sent: undefined,
      addresses: [],
      replies: new Map(),
      last: undefined,
      forkedAt: Date.now(),
    };
    slot.started = new Promise<void>((resolve, reject) => {
      worker.on('message', (message: FromWorker) => {
        if (message.type === 'started') resolve();
        else if ('id' in message) {
          const reply = slot.replies.get(message.id);
          slot.replies.delete(message.id);
          reply?.(message);
        }
      });
      worker.once('exit', (code, signal) => {
        reject(new Error(`worker ${worker.id} exited (${signal ?? code}) before it started`));
        onExit(slot, code, signal);
      });
    });
    slot.started.catch(() => undefined);
    slots.splice(index, 0, slot);
    return slot;
  }

  function onExit(slot: Slot, code: number | null, signal: string | null): void {
    const index = slots.indexOf(slot);
    if (index < 0) return;
    const gone = `worker ${slot.worker.id} exited (${signal ?? code})`;
    for (const reply of slot.replies.values()) {
      reply({ type: 'applied', id: 0, outcome: { ok: false, error: gone }, addresses: [] });
    }
    slot.replies.clear();
    if (slot.last !== undefined) {
      retired = mergeMetrics([retired, { ...slot.last, connections: [], inFlight: 0 }]);
    }
    if (draining || closed) {
      slots.splice(index, 1);
      return;
    }
    // The other workers keep their connections; a new worker takes this one's place with the current config,
    // at once unless workers keep dying young (then after a delay that doubles, up to 5 s).
    slots.splice(index, 1);
    restarts++;
    const young = Date.now() - slot.forkedAt < YOUNG_MS;
    crashLoop = young ? crashLoop + 1 : 0;
    const delayMs = crashLoop === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 100 * 2 ** (crashLoop - 1));
    options.log(`${gone}; starting another${delayMs > 0 ? ` in ${delayMs} ms` : ''}`);
    const replace = (): void => {
      if (draining || closed) return;
      const next = fork(Math.min(index, slots.length));
      queue = queue.then(async () => {
        await next.started;
        if (current !== undefined) await applyTo(next, current.config, current.version);
      });
      queue.catch(() => undefined);
    };
    if (delayMs === 0) replace();
    else setTimeout(replace, delayMs).unref();
  }

  async function applyTo(
    slot: Slot,
    config: FleetConfig,
    version: string | undefined,
  ): Promise<ApplyOutcome> {
    await slot.started;
    const id = nextId++;
    const message: ToWorker & { id: number } =
      slot.sent === undefined
        ? { type: 'apply', id, version, full: config }
        : { type: 'apply', id, version, delta: fleetConfigDelta(slot.sent, config) };
    const reply = await request(slot, message);
    if (reply.type !== 'applied') return { ok: false, error: 'unexpected reply from a worker' };
    slot.sent = reply.outcome.ok ? config : undefined;
    if (reply.outcome.ok) slot.addresses = reply.addresses;
    return reply.outcome;
  }

  async function applyNow(config: FleetConfig, version: string | undefined): Promise<ApplyOutcome> {
    if (draining) return { ok: false, error: 'proxy is draining' };
    const targets = [...slots];
    const outcomes = await Promise.all(targets.map((slot) => applyTo(slot, config, version).catch(failed)));
    const refused = outcomes.findIndex((o) => !o.ok);
    if (refused >= 0) {
      const o = outcomes[refused] as { ok: false; error: string };
      return { ok: false, error: `worker ${targets[refused]?.worker.id}: ${o.error}` };
    }
    current = { config, version, appliedAt: new Date().toISOString() };
    return mergeOutcomes(outcomes as Extract<ApplyOutcome, { ok: true }>[]);
  }

  async function stats(): Promise<WorkerStats[]> {
    return Promise.all(
      slots.map(async (slot) => {
        const reply = await request(slot, { type: 'stats', id: nextId++ }, STATS_TIMEOUT_MS);
        const answer = reply.type === 'stats' ? reply.stats : unanswered(slot);
        slot.last = answer.metrics;
        return answer;
      }),
    );
  }

  async function drainNow(drainMs: number, maxMs: number): Promise<void> {
    draining = true;
    options.onDraining?.();
    options.log(
      `draining ${slots.length} workers: serving ${drainMs} ms more, then up to ${maxMs} ms in flight`,
    );
    const exits = slots.map(
      (slot) => new Promise<void>((resolve) => slot.worker.once('exit', () => resolve())),
    );
    for (const slot of slots) slot.worker.send({ type: 'drain', drainMs, maxMs } satisfies ToWorker);
    const late = setTimeout(() => {
      for (const slot of slots) slot.worker.process.kill('SIGKILL');
    }, maxMs + DRAIN_GRACE_MS);
    await Promise.all(exits);
    clearTimeout(late);
    drained = true;
    options.log('drained');
  }

  const proxy: PorticoProxy = {
    get ready() {
      return current !== undefined && !draining;
    },
    get started() {
      return started;
    },
    apply(config, version) {
      const next = queue.then(() => applyNow(config as FleetConfig, version));
      queue = next.catch(() => undefined);
      return next;
    },
    drain(drainOptions = {}) {
      drainPromise ??= drainNow(
        drainOptions.drainMs ?? options.drainMs,
        drainOptions.maxMs ?? options.maxDrainMs,
      );
      return drainPromise;
    },
    async close() {
      closed = true;
      draining = true;
      const exits = slots.map(
        (slot) => new Promise<void>((resolve) => slot.worker.once('exit', () => resolve())),
      );
      for (const slot of slots) slot.worker.process.kill('SIGKILL');
      for (const s of sideServers) s.server.close();
      sideServers = [];
      await Promise.all(exits);
    },
    addresses() {
      return [
        ...(slots[0]?.addresses ?? []),
        ...sideServers.map((s) => ({ listener: s.name, ...sideServerAddress(s) })),
      ];
    },
  };

  const view: AdminView = {
    get ready() {
      return proxy.ready;
    },
    get draining() {
      return draining;
    },
    get drained() {
      return drained;
    },
    async notLive() {
      if (drained) return 'drained: its listeners are closed';
      if (draining) return undefined;
      return (await stats()).find((s) => s.notLive !== undefined)?.notLive;
    },
    config: () => current?.config,
    version: () =>
      current === undefined ? undefined : { version: current.version ?? '', appliedAt: current.appliedAt },
    inFlight: async () => (await stats()).reduce((n, s) => n + s.metrics.inFlight, 0),
    startDrain: () => void proxy.drain(),
    metrics: async () => {
      const each = (await stats()).map((s) => s.metrics);
      const text = renderMetrics(mergeMetrics([retired, ...each]));
      const serving = slots.filter((slot) => slot.sent !== undefined).length;
      return `${text}${workerLines(each, serving, restarts)}`;
    },
  };

  started = (async () => {
    // Its own ports first: a proxy that cannot have them exits (98) before it forks anything.
    sideServers = await startSideServers(view, {
      admin: options.adminAddress,
      metrics: options.metricsAddress,
      ready: options.readyAddress,
    });
    for (let i = 0; i < Math.max(1, input.workers); i++) fork(i);
    try {
      await Promise.all(slots.map((s) => s.started));
    } catch (error) {
      // Left running, the workers' IPC channels would keep this process from ever exiting.
      await proxy.close();
      throw error;
    }
    options.log(`${slots.length} workers (${settings.balancing} accept balancing)`);
  })();
  started.catch(() => undefined); // reported through `started`
  return proxy;
}

function failed(error: unknown): ApplyOutcome {
  return { ok: false, error: (error as Error).message };
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

function emptyMetrics(): MetricsSnapshot {
  return { routes: [], upstreamErrors: [], connections: [], accepted: 0, inFlight: 0 };
}

/** The primary's own series: workers, restarts, and each worker's accepted connections (the spread). */
function workerLines(each: MetricsSnapshot[], serving: number, restarts: number): string {
  return [
    '# HELP portico_proxy_workers Worker processes serving a config (a replacement counts once it applied one).',
    '# TYPE portico_proxy_workers gauge',
    `portico_proxy_workers ${serving}`,
    '# HELP portico_proxy_worker_restarts_total Workers that died and were replaced.',
    '# TYPE portico_proxy_worker_restarts_total counter',
    `portico_proxy_worker_restarts_total ${restarts}`,
    '# HELP portico_proxy_worker_connections_total Connections accepted, by worker (its place, 0 to workers-1).',
    '# TYPE portico_proxy_worker_connections_total counter',
    ...each.map((m, i) => `portico_proxy_worker_connections_total{worker="${i}"} ${m.accepted}`),
    '',
  ].join('\n');
}

/** One worker serves in this process, as a proxy always did; more are processes under this one. */
export function createProxyWithWorkers(input: WorkerProxyOptions): PorticoProxy {
  return input.workers <= 1 ? createProxy(input) : createWorkerProxy(input);
}

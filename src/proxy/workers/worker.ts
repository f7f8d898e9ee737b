// A proxy worker: a process of node:cluster serving every listener of the fleet config its primary sends. It
// has no discovery stream and no side servers of its own: the primary speaks for it.
import cluster from 'node:cluster';
import { isMainThread } from 'node:worker_threads';
import type { FleetConfig } from '../../ir/fleet-config.js';
import { patchFleetConfig } from '../../ir/fleet-config-patch.js';
import { type Logger, type LogLevel, logToStderrTimed } from '../../platform/log-line.js';
import { appendStageTrace } from '../../trace/propagation-trace.js';
import { createProxy } from '../proxy.js';
import { PrimaryRateStore } from './primary-rate-store.js';
import type { FromWorker, ToWorker, WorkerSettings } from './protocol.js';

/** The environment variable that carries WorkerSettings (JSON) from the primary. */
export const WORKER_SETTINGS_ENV = 'PORTICO_PROXY_WORKER';

function send(message: FromWorker): void {
  process.send?.(message);
}

/** The worker's lines go to its primary, whose logger shows or drops them; an orphan says why it goes itself. */
function primaryLogger(id: number): Logger {
  const line = (level: LogLevel) => (text: string) => {
    if (process.connected)
      process.send?.({ type: 'log', level, line: text } satisfies FromWorker, undefined, undefined, () => {});
    else logToStderrTimed(`${level} worker ${id}: ${text}`);
  };
  return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') };
}

export function runWorker(settings: WorkerSettings): void {
  const id = cluster.worker?.id ?? 0;
  const buckets = new PrimaryRateStore();
  const proxy = createProxy({
    localRateStore: buckets,
    bindAddress: settings.bindAddress,
    limits: settings.limits,
    http2: settings.http2,
    portOffset: settings.portOffset,
    drainMs: settings.drainMs,
    maxDrainMs: settings.maxDrainMs,
    reusePort: settings.balancing === 'reuse-port',
    layer4Relay: settings.layer4Relay,
    accessLog: settings.accessLog,
    tracing: settings.tracing,
    log: primaryLogger(id),
    trace: settings.traceEvents === undefined ? undefined : appendStageTrace(settings.traceEvents),
  });
  let config: FleetConfig | undefined;

  const apply = async (message: Extract<ToWorker, { type: 'apply' }>): Promise<void> => {
    const delta = message.delta;
    const next =
      message.full ??
      (config === undefined || delta === undefined
        ? undefined
        : patchFleetConfig(config, delta.changed, delta.removed));
    if (next === undefined) {
      const outcome = { ok: false as const, error: 'a delta arrived before any whole config' };
      send({ type: 'applied', id: message.id, outcome, addresses: [] });
      return;
    }
    // A delta says exactly what changed: the worker's proxy validates and compiles only that. Its changed
    // resources go as they came: the change's readers take only their type and name.
    const change =
      config === undefined || delta === undefined
        ? undefined
        : { since: config, config: next, changed: delta.changed, removed: delta.removed };
    const outcome = await proxy.apply(next, message.version, change);
    if (outcome.ok) config = next;
    const addresses = proxy.addresses();
    send({ type: 'applied', id: message.id, outcome, addresses });
  };

  // Applies and the drain are handled in order (an apply must finish before the next delta builds on it);
  // stats are answered at once, also while a drain waits for requests in flight.
  let queue: Promise<void> = Promise.resolve();
  process.on('message', (message: ToWorker) => {
    if (message.type === 'leased') {
      buckets.settle(message);
      return;
    }
    if (message.type === 'stats') {
      send({ type: 'stats', id: message.id, stats: proxy.stats() });
      return;
    }
    queue = queue.then(async () => {
      if (message.type === 'apply') await apply(message);
      else if (message.type === 'settings') {
        const outcome = await proxy.reconfigure({ ...message.settings, workers: 1 });
        send({ type: 'reconfigured', id: message.id, outcome });
      } else if (message.type === 'drain') {
        await proxy.drain({ drainMs: message.drainMs, maxMs: message.maxMs });
        await proxy.close();
        send({ type: 'drained', metrics: proxy.stats().metrics });
        process.disconnect();
      }
    });
  });
  // The primary decides when a worker stops: a signal to the process group (Ctrl-C) is the primary's to handle.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => {});
  // If the primary dies, nothing would feed or stop this worker: it goes too, without cutting requests short.
  process.on('disconnect', () => {
    void proxy
      .drain({ drainMs: 0 })
      .then(() => proxy.close())
      .finally(() => process.exit(0));
  });
  send({ type: 'started' });
}

if (cluster.isWorker && isMainThread && process.env[WORKER_SETTINGS_ENV] !== undefined) {
  runWorker(JSON.parse(process.env[WORKER_SETTINGS_ENV]) as WorkerSettings);
}

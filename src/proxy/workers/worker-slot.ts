// One worker process as the primary sees it: requests over IPC matched to their replies, what it applied last
// (the base of the next delta), and its counts as last reported.
import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import type { FleetConfig } from '../../ir/fleet-config.js';
import { PorticoError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log-line.js';
import type { RateStore } from '../limits/rate-store.js';
import type { MetricsSnapshot } from '../telemetry/metrics.js';
import type { FromWorker, ToWorker, WorkerSettings } from './protocol.js';
import { WORKER_SETTINGS_ENV } from './worker.js';

type Request = Extract<ToWorker, { id: number }>;

export interface WorkerSlot {
  worker: Worker;
  /** Resolves once the worker reported it runs; rejects if it exits first. */
  started: Promise<void>;
  /** What this worker applied last: the next update is a delta from it (undefined: send the whole config). */
  sent: FleetConfig | undefined;
  addresses: { listener: string; port: number; address: string }[];
  /** Its counts as last reported: what stays counted if it dies (counters never go back). */
  last: MetricsSnapshot | undefined;
  forkedAt: number;
  /**
   * Sends `message`; resolves with the worker's reply, or with `fallback(reason)` when the worker is gone, the
   * channel is closed, or (given `timeoutMs`) it does not answer in time. Never rejects.
   */
  request(
    message: Request,
    fallback: (reason: string) => FromWorker,
    timeoutMs?: number,
  ): Promise<FromWorker>;
}

/** The worker entry: the compiled .js next to this file, or the .ts source when run from source (tests, tsx). */
function workerEntry(): string {
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return fileURLToPath(new URL(`./worker${ext}`, import.meta.url));
}

/**
 * The primary's Node options for its workers, less a script given on the command line: a primary started as
 * `node -e SCRIPT` (an embedding, a benchmark) would otherwise have every worker run SCRIPT instead.
 */
export function workerExecArgv(argv: readonly string[] = process.execArgv): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-e' || arg === '--eval' || arg === '-p' || arg === '--print') i++;
    else if (!/^--(eval|print|input-type)=/.test(arg)) out.push(arg);
  }
  return out;
}

/** Answers a worker's lease from the primary's buckets (a local table: synchronous). */
function lease(worker: Worker, buckets: RateStore, message: Extract<FromWorker, { type: 'lease' }>): void {
  void Promise.resolve(buckets.take(message.rule, message.key, message.want)).then((grant) => {
    const reply: ToWorker = { type: 'leased', lease: message.lease, grant };
    if (worker.isConnected()) worker.send(reply, undefined, undefined, () => {});
  });
}

/** Forks a worker with `settings`; `onExit` runs once it exits, after its pending requests got their fallback. */
export function forkWorker(
  settings: WorkerSettings,
  log: Logger,
  onExit: (slot: WorkerSlot, code: number | null, signal: string | null) => void,
  /** The primary's token buckets, which the workers' Local rate limits lease from. */
  buckets: RateStore,
): WorkerSlot {
  // Round robin unless the workers bind with SO_REUSEPORT (then the primary holds no listening socket).
  cluster.schedulingPolicy = cluster.SCHED_RR;
  cluster.setupPrimary({ exec: workerEntry(), execArgv: workerExecArgv(), serialization: 'advanced' });
  const worker = cluster.fork({ [WORKER_SETTINGS_ENV]: JSON.stringify(settings) });
  const pending = new Map<
    number,
    { resolve: (reply: FromWorker) => void; fallback: (reason: string) => FromWorker }
  >();
  let gone: string | undefined;
  const slot: WorkerSlot = {
    worker,
    started: Promise.resolve(),
    sent: undefined,
    addresses: [],
    last: undefined,
    forkedAt: Date.now(),
    request(message, fallback, timeoutMs) {
      if (gone !== undefined) return Promise.resolve(fallback(gone));
      return new Promise<FromWorker>((resolve) => {
        const timer =
          timeoutMs === undefined
            ? undefined
            : setTimeout(
                () => answer(message.id, fallback(`worker ${worker.id} does not answer`)),
                timeoutMs,
              );
        pending.set(message.id, {
          resolve: (reply) => {
            if (timer !== undefined) clearTimeout(timer);
            resolve(reply);
          },
          fallback,
        });
        // A callback, so a channel closing under us is this request's failure, not an 'error' event.
        worker.send(message, undefined, undefined, (error: Error | null) => {
          if (error !== null) answer(message.id, fallback(`worker ${worker.id}: ${error.message}`));
        });
      });
    },
  };
  const answer = (id: number, reply: FromWorker): void => {
    const waiting = pending.get(id);
    pending.delete(id);
    waiting?.resolve(reply);
  };
  slot.started = new Promise<void>((resolve, reject) => {
    worker.on('message', (message: FromWorker) => {
      if (message.type === 'started') resolve();
      else if (message.type === 'log') log[message.level](`worker ${worker.id}: ${message.line}`);
      else if (message.type === 'drained') slot.last = message.metrics;
      else if (message.type === 'lease') lease(worker, buckets, message);
      else if ('id' in message) answer(message.id, message);
    });
    worker.once('exit', (code, signal) => {
      gone = `worker ${worker.id} exited (${signal ?? code})`;
      reject(new PorticoError('E_WORKER', `${gone} before it started`));
      for (const [id, waiting] of pending) answer(id, waiting.fallback(gone));
      onExit(slot, code, signal);
    });
  });
  slot.started.catch(() => undefined);
  return slot;
}

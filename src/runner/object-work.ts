// Work on many objects (apply one fleet's infrastructure, write one status) where each object's failure is its
// own: a few run at once, one that fails waits its own backoff while the others go on, the latest wish for an
// object replaces an older one that has not started, and a wish that changed is tried at once.
import { afterFailure, type Backoff, type BackoffTimings, mayTry } from './backoff.js';

export interface ObjectWorkOptions {
  /** Objects worked on at once: a hung request holds one of these, never the rest. */
  concurrency: number;
  backoff: BackoffTimings;
  /** Whether work may start now (Kubernetes: while leading); work found not allowed is dropped, not failed. */
  allowed?: () => boolean;
  /** The object's work failed; it runs again in `retryInMs` unless something else is wanted of it first. */
  onError(key: string, error: unknown, retryInMs: number): void;
  /** The clock and the timer of the retries (tests drive them by hand). */
  now?: () => number;
  setTimer?: (ms: number, fire: () => void) => () => void;
}

export interface ObjectWork {
  /**
   * `run` is what `fingerprint` wants of the object `key`. It starts soon, unless the object is failing with the
   * same fingerprint (it waits for its retry) or is running (then it runs once more after, if the wish changed).
   */
  submit(key: string, fingerprint: string, run: () => Promise<void>): void;
  /** Forgets every other object: its queued work, backoff and retry (work already running finishes). */
  retain(keys: ReadonlySet<string>): void;
  /** Forgets these objects, as retain forgets the others. */
  forget(keys: Iterable<string>): void;
  /** Whether the object's last attempt failed (and it waits for a retry). */
  failing(key: string): boolean;
  /** Resolves once nothing runs or waits to start (retries that wait for their time excepted). */
  idle(): Promise<void>;
  /** Forgets every object (a new leader checks everything afresh). */
  reset(): void;
  stop(): void;
}

interface Entry {
  fingerprint: string;
  run: () => Promise<void>;
  backoff?: Backoff;
  cancelRetry?: () => void;
  running: boolean;
  queued: boolean;
  /** Submitted with another fingerprint while running: run again after. */
  again: boolean;
}

const defaultTimer = (ms: number, fire: () => void): (() => void) => {
  const timer = setTimeout(fire, ms);
  return () => clearTimeout(timer);
};

/** Forgets the object at `key`: its retry no longer waits, it leaves the queue and the entries. */
function forgetEntry(entries: Map<string, Entry>, queue: Set<string>, key: string): void {
  const entry = entries.get(key);
  if (entry === undefined) return;
  entry.cancelRetry?.();
  entry.queued = false;
  queue.delete(key);
  entries.delete(key);
}

export function createObjectWork(options: ObjectWorkOptions): ObjectWork {
  const now = options.now ?? Date.now;
  const setTimer = options.setTimer ?? defaultTimer;
  const allowed = options.allowed ?? (() => true);
  const entries = new Map<string, Entry>();
  // In submission order; a Set, so taking the first of thousands queued is not a shift of all the others.
  const queue = new Set<string>();
  let active = 0;
  let stopped = false;
  let idleWaiters: (() => void)[] = [];

  function enqueue(key: string, entry: Entry): void {
    if (entry.queued || entry.running || stopped) return;
    entry.queued = true;
    queue.add(key);
    pump();
  }

  function pump(): void {
    for (const key of queue) {
      if (active >= options.concurrency) break;
      queue.delete(key);
      const entry = entries.get(key);
      if (entry === undefined || !entry.queued) continue;
      entry.queued = false;
      if (!allowed()) continue;
      void start(key, entry);
    }
    if (active === 0 && queue.size === 0) for (const wake of idleWaiters.splice(0)) wake();
  }

  async function start(key: string, entry: Entry): Promise<void> {
    active++;
    entry.running = true;
    const fingerprint = entry.fingerprint;
    try {
      await entry.run();
      if (entry.fingerprint === fingerprint) delete entry.backoff;
    } catch (error) {
      failed(key, entry, fingerprint, error);
    } finally {
      entry.running = false;
      active--;
      if (entry.again && entries.get(key) === entry) {
        entry.again = false;
        enqueue(key, entry);
      }
      pump();
    }
  }

  function failed(key: string, entry: Entry, fingerprint: string, error: unknown): void {
    if (entries.get(key) !== entry || stopped) return;
    entry.backoff = afterFailure(entry.backoff, fingerprint, now(), options.backoff);
    const wait = entry.backoff.retryAt - now();
    options.onError(key, error, wait);
    // A newer wish runs at once (after this attempt); the failed one waits.
    if (entry.fingerprint !== fingerprint) return;
    entry.cancelRetry?.();
    entry.cancelRetry = setTimer(wait, () => {
      entry.cancelRetry = undefined;
      if (entries.get(key) === entry) enqueue(key, entry);
    });
  }

  return {
    submit(key, fingerprint, run) {
      if (stopped) return;
      let entry = entries.get(key);
      if (entry === undefined) {
        entry = { fingerprint, run, running: false, queued: false, again: false };
        entries.set(key, entry);
      }
      const changed = entry.fingerprint !== fingerprint;
      entry.fingerprint = fingerprint;
      entry.run = run;
      if (changed) entry.cancelRetry?.();
      if (entry.running) {
        if (changed) entry.again = true;
        return;
      }
      if (mayTry(entry.backoff, fingerprint, now())) enqueue(key, entry);
    },
    retain(keys) {
      // Deleting the key being visited is safe in a Map's iteration: no copy of thousands of keys per pass.
      for (const key of entries.keys()) if (!keys.has(key)) forgetEntry(entries, queue, key);
    },
    forget(keys) {
      for (const key of keys) forgetEntry(entries, queue, key);
    },
    failing: (key) => entries.get(key)?.backoff !== undefined,
    idle() {
      if (active === 0 && queue.size === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    reset() {
      for (const key of entries.keys()) forgetEntry(entries, queue, key);
      queue.clear();
    },
    stop() {
      stopped = true;
      for (const key of entries.keys()) forgetEntry(entries, queue, key);
      queue.clear();
      for (const wake of idleWaiters.splice(0)) wake();
      idleWaiters = [];
    },
  };
}

// The runner's status sink on Kubernetes: the status subresource, written while this replica leads; condition
// times carry over from the object as the informer shows it. Each object's write is its own: a few at once, one
// that fails (a 422, a 403, a timeout) waits its own backoff, and no write holds the pass or the others.

import { discardingLogger, type Logger } from '../../platform/log-line.js';
import { type BackoffTimings, OBJECT_BACKOFF } from '../../runner/backoff.js';
import { createObjectWork } from '../../runner/object-work.js';
import type { StatusSink } from '../../runner/runner.js';
import { restamp, type StampedStatus, statusKey } from '../../runner/status-stamps.js';
import type { ObjectStatus } from '../../translate/index.js';
import type { ResourceWatch } from './resource-watch.js';
import { canonical, type StatusWriter } from './status-writer.js';

/** The key informers and infrastructure use: `namespace/name`, or `name` for cluster-scoped kinds. */
const objectKey = (s: ObjectStatus): string =>
  s.namespace === undefined ? s.name : `${s.namespace}/${s.name}`;

export interface ApiStatusSinkOptions {
  /** Per-object retries (default 2 s doubling to 5 min) and writes at once (default 8). */
  backoff?: BackoffTimings;
  concurrency?: number;
  now?: () => number;
  setTimer?: (ms: number, fire: () => void) => () => void;
  log?: Logger;
}

export interface ApiStatusSink extends StatusSink {
  showChanged: NonNullable<StatusSink['showChanged']>;
  wantsAll: NonNullable<StatusSink['wantsAll']>;
  /** Resolves once no write runs or waits to start (retries waiting for their time excepted). */
  idle(): Promise<void>;
  /** Forgets what was written: a new leader checks every status afresh (it wants all statuses next). */
  reset(): void;
  /**
   * The object's status changed on the API server without its spec (our write coming back, or another writer):
   * its status is checked against what this sink last wrote, and written again if it differs.
   */
  recheck(kind: string, key: string): void;
  stop(): void;
}

const STATUS_CONCURRENCY = 8;

/** Statuses go to the status subresource, each on its own, while this replica still leads. */
export function apiStatusSink(
  resources: Pick<ResourceWatch, 'raw'>,
  writer: StatusWriter,
  leading: () => boolean,
  options: ApiStatusSinkOptions = {},
): ApiStatusSink {
  const log = options.log ?? discardingLogger;
  const work = createObjectWork({
    concurrency: options.concurrency ?? STATUS_CONCURRENCY,
    backoff: options.backoff ?? OBJECT_BACKOFF,
    allowed: leading,
    now: options.now,
    setTimer: options.setTimer,
    onError: (key, error, retryInMs) =>
      log.warn(
        `status of ${key}: ${(error as Error).message}; retrying in ${Math.round(retryInMs / 1000)} s`,
      ),
  });

  // Per object, the stamped status last written (or found shown already) while leading. The stamper hands back
  // the same object while neither the translation nor the object as shown changed: then there is nothing to
  // submit, and a pass over thousands of unchanged objects costs a lookup each, not a canonical JSON each.
  const settled = new Map<string, StampedStatus>();
  // Per object, the resourceVersion our last write gave it: its watch event coming back is no news.
  const ownVersions = new Map<string, string>();
  const submitted = new WeakMap<StampedStatus, { key: string; fingerprint: string }>();

  async function write(key: string, s: StampedStatus): Promise<void> {
    if (!leading()) return;
    // Compared with the object as seen now: stamped against it, if it changed since the stamping.
    const current = resources.raw(s.translated.kind, objectKey(s.translated));
    const stampAgainst = (shown: unknown) => restamp(s, shown, new Date());
    const status = current === s.shown ? s.stamped : stampAgainst(current?.status);
    const version = await writer.write(status, current, stampAgainst);
    if (!leading()) return;
    settled.set(key, s);
    if (version !== undefined) ownVersions.set(key, version);
  }

  function submission(s: StampedStatus): { key: string; fingerprint: string } {
    let known = submitted.get(s);
    if (known === undefined) {
      const key = statusKey(s.translated);
      known = { key, fingerprint: `${s.stamped.generation} ${canonical(s.stamped.status)}` };
      submitted.set(s, known);
    }
    return known;
  }

  /** Submits the status unless it is the very one last written (or found shown already). */
  function submit(s: StampedStatus): string {
    const { key, fingerprint } = submission(s);
    if (settled.get(key)?.stamped !== s.stamped) work.submit(key, fingerprint, () => write(key, s));
    return key;
  }

  // The last statuses handed over, by key: what a recheck compares the object with.
  const wanted = new Map<string, StampedStatus>();
  let wantsAll = true;

  return {
    shown: (s) => resources.raw(s.kind, objectKey(s)),
    show(statuses) {
      const keys = new Set<string>();
      wanted.clear();
      for (const s of statuses) {
        const key = submit(s);
        keys.add(key);
        wanted.set(key, s);
      }
      work.retain(keys);
      for (const key of settled.keys()) if (!keys.has(key)) settled.delete(key);
      for (const key of ownVersions.keys()) if (!keys.has(key)) ownVersions.delete(key);
      wantsAll = false;
    },
    showChanged(changed, removed) {
      for (const s of changed) wanted.set(submit(s), s);
      const gone = removed.map(statusKey);
      work.forget(gone);
      for (const key of gone) {
        settled.delete(key);
        wanted.delete(key);
        ownVersions.delete(key);
      }
    },
    wantsAll: () => wantsAll,
    recheck(kind, key) {
      const sinkKey = `${kind} ${key}`;
      const s = wanted.get(sinkKey);
      if (s === undefined || !leading()) return;
      // Only an object this sink settled can drift; one still being written is written against the latest.
      if (settled.get(sinkKey) !== s) return;
      const meta = resources.raw(kind, key)?.metadata as { resourceVersion?: unknown } | undefined;
      if (meta?.resourceVersion !== undefined && meta.resourceVersion === ownVersions.get(sinkKey)) return;
      settled.delete(sinkKey);
      work.submit(sinkKey, submission(s).fingerprint, () => write(sinkKey, s));
    },
    idle: () => work.idle(),
    reset() {
      settled.clear();
      ownVersions.clear();
      work.reset();
      wantsAll = true;
    },
    stop: () => work.stop(),
  };
}

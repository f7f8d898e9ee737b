// What a batch of file changes does: it is applied to the resource store, reported, and reconciled at once;
// object metadata (uid, creation time, generation) is saved at most once a second, off that path.
import { formatResourceError } from '../../api/common.js';
import type { Logger } from '../../platform/log-line.js';
import type { Runner } from '../../runner/runner.js';
import type { StageTrace } from '../../trace/propagation-trace.js';
import type { FileBatch } from './file-watch.js';
import type { ResourceStore } from './resource-store.js';

const STORE_SAVE_INTERVAL_MS = 1000;

export interface FileBatches {
  apply(batch: FileBatch): Promise<void>;
  /** Stops the pending metadata save (the caller saves once more on close). */
  close(): void;
}

export function fileBatches(
  store: ResourceStore,
  runner: Runner,
  paths: readonly string[],
  log: Logger,
  trace: StageTrace = () => {},
): FileBatches {
  let firstBatch = true;
  let saveTimer: NodeJS.Timeout | undefined;
  const saveStore = (): void => {
    saveTimer = undefined;
    store
      .save()
      .catch((error: unknown) => log.error(`cannot save object metadata: ${(error as Error).message}`));
  };

  function report(batch: FileBatch, changed: boolean): void {
    if (firstBatch) {
      firstBatch = false;
      const counts = new Map<string, number>();
      for (const o of store.objects()) counts.set(o.kind, (counts.get(o.kind) ?? 0) + 1);
      const summary = [...counts].map(([kind, n]) => `${n} ${kind}`).join(', ');
      log.info(`loaded ${summary || 'no objects'} from ${paths.join(', ')}`);
    } else {
      const files = [...batch.changed.keys(), ...batch.removed].join(', ');
      // Written once the config is on its way (the pass yields after publishing), still before its statuses.
      if (changed) setImmediate(() => log.info(`applied changes from ${files}`));
      else log.info(`no change from ${files}: the objects read are the ones already applied`);
    }
  }

  return {
    async apply(batch) {
      const result = store.apply(batch);
      trace('parsed');
      for (const e of result.errors) log.error(formatResourceError(e));
      report(batch, result.changed);
      if (result.changed || !runner.ready()) await runner.now();
      saveTimer ??= setTimeout(saveStore, STORE_SAVE_INTERVAL_MS);
    },
    close() {
      clearTimeout(saveTimer);
    },
  };
}

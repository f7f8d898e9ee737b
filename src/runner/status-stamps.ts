// The one place condition times are stamped: each translated status gets `lastTransitionTime`s carried over
// from the status its object shows now, and only when the translation or the shown object changed.
import { stampConditionTimes } from '../api/condition-times.js';
import { objectId } from '../api/kinds.js';
import type { ObjectStatus } from '../translate/index.js';

/** An object as a status sink shows it; its `status` is what condition times carry over from. */
export interface ShownObject {
  status?: unknown;
}

export interface StampedStatus {
  /** The status as translated (after the runner's own amendments), without times. */
  translated: ObjectStatus;
  /** `translated` with condition times, carried over from `shown`. */
  stamped: ObjectStatus;
  /** The object it was stamped against; undefined when the object shows no status yet. */
  shown: ShownObject | undefined;
}

export interface StatusStamper {
  /** Stamped statuses in translation order; `shownOf` undefined means against the last stamped ones. */
  stamp(
    statuses: readonly ObjectStatus[],
    shownOf: ((status: ObjectStatus) => ShownObject | undefined) | undefined,
    now: Date,
  ): StampedStatus[];
  /**
   * Only the statuses that changed since the last stamping (the others stand as stamped then), and those of
   * objects that have none any more: the changed ones stamped.
   */
  stampChanged(
    changed: readonly ObjectStatus[],
    removed: readonly ObjectStatus[],
    shownOf: ((status: ObjectStatus) => ShownObject | undefined) | undefined,
    now: Date,
  ): StampedStatus[];
  /** The last stamped status of each object, by `statusKey`. */
  current(): ReadonlyMap<string, ObjectStatus>;
}

/** `Kind namespace/name` (or `Kind name`): the same key as `describeObject` gives the object. */
export function statusKey(s: ObjectStatus): string {
  return objectId(s.kind, s.name, s.namespace);
}

/** `translated` stamped against another shown status (a sink that re-read its object after a write conflict). */
export function restamp(status: StampedStatus, shown: unknown, now: Date): ObjectStatus {
  const previous = typeof shown === 'object' && shown !== null ? shown : undefined;
  return {
    ...status.translated,
    status: stampConditionTimes(previous, status.translated.status, now),
  };
}

interface Entry extends StampedStatus {
  /** The translated status's JSON: an equal status from a new object keeps its stamps. */
  json: string;
}

export function createStatusStamper(): StatusStamper {
  const entries = new Map<string, Entry>();
  const stamped = new Map<string, ObjectStatus>();
  const keys = new WeakMap<ObjectStatus, string>();

  function keyOf(s: ObjectStatus): string {
    let key = keys.get(s);
    if (key === undefined) {
      key = statusKey(s);
      keys.set(s, key);
    }
    return key;
  }

  function stampOne(
    s: ObjectStatus,
    key: string,
    shownOf: ((status: ObjectStatus) => ShownObject | undefined) | undefined,
    now: Date,
  ): Entry {
    const before = entries.get(key);
    // Without a sink's own view, the object shows what was stamped last time: only the translation can change.
    const shown = shownOf === undefined ? before?.stamped : shownOf(s);
    const unchangedShown = shownOf === undefined || before?.shown === shown;
    // The translator hands back the same object for an unchanged object: nothing to stamp or compare.
    if (before !== undefined && before.translated === s && unchangedShown) return before;
    const json = before?.translated.status === s.status ? before.json : JSON.stringify(s.status);
    if (before !== undefined && before.json === json && unchangedShown) {
      const entry = { ...before, translated: s };
      entries.set(key, entry);
      return entry;
    }
    const entry: Entry = { translated: s, stamped: s, shown, json };
    entry.stamped = restamp(entry, shown?.status, now);
    entries.set(key, entry);
    stamped.set(key, entry.stamped);
    return entry;
  }

  function dropGone(statuses: readonly ObjectStatus[], known: number): void {
    // Some objects of last time have no status now (rare, so only then build the key set).
    if (known >= entries.size - (statuses.length - known)) return;
    const current = new Set(statuses.map(keyOf));
    for (const key of [...entries.keys()]) {
      if (current.has(key)) continue;
      entries.delete(key);
      stamped.delete(key);
    }
  }

  return {
    stamp(statuses, shownOf, now) {
      let known = 0;
      const out = statuses.map((s) => {
        const key = keyOf(s);
        if (entries.has(key)) known++;
        return stampOne(s, key, shownOf, now);
      });
      dropGone(statuses, known);
      return out;
    },
    stampChanged(changed, removed, shownOf, now) {
      for (const s of removed) {
        const key = keyOf(s);
        entries.delete(key);
        stamped.delete(key);
      }
      return changed.map((s) => stampOne(s, keyOf(s), shownOf, now));
    },
    current: () => stamped,
  };
}

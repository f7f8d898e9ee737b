// A new snapshot whose per-kind lists are the previous lists wherever they hold the same objects in the same
// order. The translator memoises on list identity (its lookup of Services, slices, grants…), so a route edit
// must not present it with a fresh, equal list of Services: that would rebuild every backend and route.
import type { ResourceSnapshot } from '../../api/snapshot.js';

function sameItems(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function reuseUnchangedLists(
  previous: ResourceSnapshot | undefined,
  next: ResourceSnapshot,
): ResourceSnapshot {
  if (previous === undefined) return next;
  const out = { ...next };
  for (const key of Object.keys(next) as (keyof ResourceSnapshot)[]) {
    if (key === 'routeChanges' || key === 'installedCrds') continue; // a hint and a record, not lists
    if (sameItems(previous[key], next[key])) (out as Record<string, unknown>)[key] = previous[key];
  }
  return out;
}

// Binary search in sorted lists, which edits keep in order (one insertion or removal) instead of sorting again.

/** The first index in [0, length) at which `before(i)` is false, for a `before` true on a prefix of the indexes. */
export function partitionPoint(length: number, before: (i: number) => boolean): number {
  let lo = 0;
  let hi = length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the first item not ordered before `item` in a list sorted by `compare`. */
export function insertionIndex<T>(list: readonly T[], item: T, compare: (a: T, b: T) => number): number {
  return partitionPoint(list.length, (i) => compare(list[i]!, item) < 0);
}

// Sorted lists kept in order by insertion, so that an edit touches one place instead of re-sorting the list.

/** Index of the first item not ordered before `item` (binary search in a list sorted by `compare`). */
export function insertionIndex<T>(list: readonly T[], item: T, compare: (a: T, b: T) => number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare(list[mid]!, item) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

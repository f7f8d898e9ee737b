// Routes of one kind in namespace/name order, kept from one translation to the next: an edit of a few routes
// re-places those few instead of sorting thousands again.
import type { RouteObject } from '../api/route-kinds.js';
import { partitionPoint } from '../platform/sorted-search.js';
import { nsName } from './object-order.js';

interface Keyed {
  key: string;
  route: RouteObject;
}

/** The last input list and its order; reused while inputs are immutable and keys unique. */
export interface SortedRoutesMemo {
  input: readonly RouteObject[];
  /** `input` as a Set, kept for the next update's "which are new" question. */
  inputSet: Set<RouteObject>;
  sorted: Keyed[];
  routes: RouteObject[];
  /** Two routes share namespace/name: the stable order then depends on input order, so sort afresh. */
  duplicates: boolean;
}

// Past this many additions a full sort is about as cheap.
const MAX_INSERTS = 64;

function fullSort(items: readonly RouteObject[]): SortedRoutesMemo {
  const sorted = items.map((route) => ({ key: nsName(route), route }));
  sorted.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  let duplicates = false;
  for (let i = 1; i < sorted.length && !duplicates; i++) duplicates = sorted[i - 1]!.key === sorted[i]!.key;
  return { input: items, inputSet: new Set(items), sorted, routes: sorted.map((k) => k.route), duplicates };
}

/** First index whose key is greater than `key`. */
function upperBound(list: readonly Keyed[], key: string): number {
  return partitionPoint(list.length, (i) => list[i]!.key <= key);
}

/**
 * When `items` is the previous input with a few objects replaced at their own index by objects of the same
 * namespace/name (an edit, as a watch or a file store delivers it), the order stands: only those are swapped in.
 * Found by comparing identities index by index, so an edit costs pointer comparisons, not a Set of every route.
 * The previous memo is consumed (its set is updated in place); undefined: not such a change.
 */
function replacedInPlace(
  previous: SortedRoutesMemo,
  items: readonly RouteObject[],
): SortedRoutesMemo | undefined {
  const input = previous.input;
  if (input.length !== items.length) return undefined;
  const replaced: [RouteObject, RouteObject, string][] = [];
  for (let i = 0; i < items.length; i++) {
    const before = input[i]!;
    const now = items[i]!;
    if (before === now) continue;
    const key = nsName(now);
    if (nsName(before) !== key || replaced.length === MAX_INSERTS) return undefined;
    replaced.push([before, now, key]);
  }
  const sorted = previous.sorted.slice();
  const routes = previous.routes.slice();
  for (const [before, now, key] of replaced) {
    const at = upperBound(sorted, key) - 1;
    // Keys are unique (no duplicates), so the entry found is the replaced object's, unless a route repeats.
    if (at < 0 || sorted[at]!.route !== before) return undefined;
    sorted[at] = { key, route: now };
    routes[at] = now;
  }
  const inputSet = previous.inputSet;
  for (const [before, now] of replaced) {
    inputSet.delete(before);
    inputSet.add(now);
  }
  return { input: items, inputSet, sorted, routes, duplicates: false };
}

function update(previous: SortedRoutesMemo, items: readonly RouteObject[]): SortedRoutesMemo {
  if (previous.input === items) return previous;
  if (previous.duplicates) return fullSort(items);
  const inPlace = replacedInPlace(previous, items);
  if (inPlace !== undefined) return inPlace;
  const before = previous.inputSet;
  const added: RouteObject[] = [];
  for (const route of items) if (!before.has(route)) added.push(route);
  if (added.length > MAX_INSERTS) return fullSort(items);
  const now = new Set(items);
  const sorted = previous.sorted.filter((k) => now.has(k.route));
  for (const route of added) {
    const key = nsName(route);
    const at = upperBound(sorted, key);
    if (at > 0 && sorted[at - 1]!.key === key) return fullSort(items);
    sorted.splice(at, 0, { key, route });
  }
  return { input: items, inputSet: now, sorted, routes: sorted.map((k) => k.route), duplicates: false };
}

/** `items` in namespace/name order (stable), reusing and updating `memo.value` when given. */
export function sortedRoutes<T extends RouteObject>(
  items: readonly T[],
  memo?: { value?: SortedRoutesMemo },
): T[] {
  const next = memo?.value === undefined ? fullSort(items) : update(memo.value, items);
  if (memo !== undefined) memo.value = next;
  // The memo holds exactly the items given, so its routes are of their type.
  return next.routes as T[];
}

/**
 * The routes after a known change of the last input (`removed` taken out of it, `added` put in, giving `items`),
 * placed by binary search without looking at the other routes; `memo.value` updated. Undefined (memo untouched)
 * when the change cannot be placed that way (no earlier order, a name repeated, an object not where expected).
 */
export function sortedRoutesAfter<T extends RouteObject>(
  items: readonly T[],
  memo: { value?: SortedRoutesMemo },
  removed: readonly RouteObject[],
  added: readonly RouteObject[],
): T[] | undefined {
  const previous = memo.value;
  if (previous === undefined || previous.duplicates) return undefined;
  if (removed.length === 0 && added.length === 0 && previous.input === items) return previous.routes as T[];
  // Copies (a block copy each), then one splice per change: the other routes are not visited one by one.
  const sorted = previous.sorted.slice();
  const routes = previous.routes.slice();
  for (const route of removed) {
    const at = upperBound(sorted, nsName(route)) - 1;
    if (at < 0 || sorted[at]!.route !== route) return undefined;
    sorted.splice(at, 1);
    routes.splice(at, 1);
  }
  for (const route of added) {
    const key = nsName(route);
    const at = upperBound(sorted, key);
    if (at > 0 && sorted[at - 1]!.key === key) return undefined;
    sorted.splice(at, 0, { key, route });
    routes.splice(at, 0, route);
  }
  const inputSet = previous.inputSet;
  for (const route of removed) inputSet.delete(route);
  for (const route of added) inputSet.add(route);
  memo.value = { input: items, inputSet, sorted, routes, duplicates: false };
  return routes as T[];
}

// Routes kept in namespace/name order from one translation to the next give the same order as sorting afresh,
// whatever the edits: objects replaced at their index (the watch's edit), added, removed, renamed, names
// repeated. (Each object is in the list once, as providers build snapshots.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HTTPRoute } from '../../src/api/http-route.js';
import type { RouteObject } from '../../src/api/route-kinds.js';
import { type SortedRoutesMemo, sortedRoutes } from '../../src/translate/sorted-routes.js';
import { random } from './random-edits.js';

function route(namespace: string, name: string, version = 0): HTTPRoute {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { namespace, name, generation: version },
    spec: { parentRefs: [], hostnames: [], rules: [] },
  } as unknown as HTTPRoute;
}

type Edit = (items: RouteObject[], n: () => number) => RouteObject[];

const at = <T>(items: readonly T[], n: () => number): number => Math.floor(n() * items.length);

const edits: Edit[] = [
  // One or a few objects replaced at their index, same name: the fast path.
  (items, n) => {
    const next = items.slice();
    for (let k = 0; k < 1 + Math.floor(n() * 3) && next.length > 0; k++) {
      const i = at(next, n);
      const r = next[i]!;
      next[i] = route(r.metadata.namespace!, r.metadata.name, (r.metadata.generation ?? 0) + 1);
    }
    return next;
  },
  // Replaced at its index by another name: the order changes.
  (items, n) => {
    if (items.length === 0) return items;
    const next = items.slice();
    next[at(next, n)] = route(`ns-${Math.floor(n() * 4)}`, `renamed-${Math.floor(n() * 1000)}`);
    return next;
  },
  (items, n) => [...items, route(`ns-${Math.floor(n() * 4)}`, `r-${Math.floor(n() * 1000)}`)],
  (items, n) => items.filter((_, i) => i !== at(items, n)),
  // A same-named object from elsewhere in the list replaces another at its index: a repeated key.
  (items, n) => {
    if (items.length < 2) return items;
    const next = items.slice();
    const r = next[at(next, n)]!;
    next[at(next, n)] = route(r.metadata.namespace!, r.metadata.name, 99);
    return next;
  },
  (items) => items.slice(),
];

for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
  test(`kept order equals a fresh sort over random edits (seed ${seed})`, () => {
    const n = random(seed);
    let items: RouteObject[] = Array.from({ length: 40 }, (_, i) =>
      route(`ns-${i % 4}`, `r-${(i * 37) % 101}`),
    );
    const memo: { value?: SortedRoutesMemo } = {};
    for (let step = 0; step < 300; step++) {
      // Mostly in-place replacements, as edits through the API server are.
      const edit = n() < 0.6 ? edits[0]! : edits[Math.floor(n() * edits.length)]!;
      items = edit(items, n);
      assert.deepEqual(sortedRoutes(items, memo), sortedRoutes(items), `step ${step}`);
    }
  });
}

test('an in-place replacement keeps the order and swaps in the new object', () => {
  const items = [route('b', 'x'), route('a', 'y'), route('a', 'x')];
  const memo: { value?: SortedRoutesMemo } = {};
  sortedRoutes(items, memo);
  const edited = route('b', 'x', 1);
  const next = [edited, items[1]!, items[2]!];
  const sorted = sortedRoutes(next, memo);
  assert.deepEqual(
    sorted.map((r) => `${r.metadata.namespace}/${r.metadata.name}`),
    ['a/x', 'a/y', 'b/x'],
  );
  assert.equal(sorted[2], edited);
});

// Snapshots that say how their route lists came from earlier ones (as the Kubernetes watch's do) are translated by
// the changed routes alone; whatever the edits, that translation equals a fresh one, its status delta and fleet
// changes say exactly what differs from the last, and most edits take that path.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import type { GRPCRoute } from '../../src/api/grpc-route.js';
import type { HTTPRoute } from '../../src/api/http-route.js';
import type { RouteObject } from '../../src/api/route-kinds.js';
import type { ListChange, ResourceSnapshot } from '../../src/api/snapshot.js';
import { FLEET_RESOURCE_TYPES, type FleetConfig } from '../../src/ir/fleet-config.js';
import { createTranslateCache, type TranslateResult, translate } from '../../src/translate/index.js';
import { loadTestdata, options, random, testdata, translation } from './random-edits.js';

type Pick = <T>(items: readonly T[]) => T | undefined;
/** One route-list edit: the objects taken out and put in (an edit of one route is both). */
type RouteEdit = (
  routes: readonly RouteObject[],
  pick: Pick,
  serial: number,
) => { removed: RouteObject[]; added: RouteObject[] };

const edits: RouteEdit[] = [
  (routes, pick) => {
    const r = pick(routes);
    if (r === undefined) return { removed: [], added: [] };
    const hostnames = pick([
      [],
      ['a.example.com'],
      ['*.example.com'],
      ['other.test', 'b.example.com'],
      [`${r.metadata.name}.example.com`],
    ])!;
    return { removed: [r], added: [{ ...r, spec: { ...r.spec, hostnames } } as RouteObject] };
  },
  (routes, pick) => {
    const r = pick(routes);
    if (r === undefined) return { removed: [], added: [] };
    const parentRefs = r.spec.parentRefs.map((p) => {
      const { sectionName: _, ...rest } = p;
      return pick([true, false]) ? rest : { ...rest, sectionName: 'http' };
    });
    return { removed: [r], added: [{ ...r, spec: { ...r.spec, parentRefs } } as RouteObject] };
  },
  (routes, pick) => {
    const r = pick(routes);
    return r === undefined ? { removed: [], added: [] } : { removed: [r], added: [] };
  },
  (routes, pick, serial) => {
    const r = pick(routes);
    if (r === undefined) return { removed: [], added: [] };
    const copy = {
      ...r,
      metadata: { ...r.metadata, name: `${r.metadata.name}-copy-${serial}` },
    } as RouteObject;
    return { removed: [], added: [copy] };
  },
  (routes, pick) => {
    const a = pick(routes);
    const b = pick(routes);
    if (a === undefined || b === undefined || a === b) return { removed: [], added: [] };
    const bump = (r: RouteObject) =>
      ({ ...r, metadata: { ...r.metadata, generation: (r.metadata.generation ?? 1) + 1 } }) as RouteObject;
    return { removed: [a, b], added: [bump(a), bump(b)] };
  },
];

/** `list` after the edit, as the watch's snapshot makes it: replaced in place, new at the end, removed swapped out. */
function applied<T extends RouteObject>(list: readonly T[], removed: readonly T[], added: readonly T[]): T[] {
  const out = list.slice();
  const key = (r: RouteObject) => `${r.metadata.namespace}/${r.metadata.name}`;
  const pending = [...added];
  for (const r of removed) {
    const at = out.indexOf(r);
    const same = pending.findIndex((a) => key(a) === key(r));
    if (same !== -1) out[at] = pending.splice(same, 1)[0]!;
    else {
      const last = out.pop()!;
      if (at < out.length) out[at] = last;
    }
  }
  out.push(...pending);
  return out;
}

/** Every status not named changed is the same object as before; removed ones are gone. */
function assertStatusDelta(
  result: TranslateResult,
  since: readonly unknown[] | undefined,
  where: string,
): void {
  const delta = result.statusDelta;
  if (delta === undefined) return;
  assert.equal(delta.since, since, `${where}: the delta is from the last statuses`);
  const before = new Set(delta.since);
  const changed = new Set(delta.changed);
  for (const s of result.statuses)
    assert.ok(changed.has(s) || before.has(s), `${where}: ${s.kind} ${s.name} unaccounted for`);
  const key = (s: { kind: string; namespace?: string; name: string }) => `${s.kind} ${s.namespace}/${s.name}`;
  const now = new Set(result.statuses.map(key));
  for (const s of delta.removed) {
    assert.ok(before.has(s), `${where}: removed ${key(s)} was there`);
    assert.ok(!now.has(key(s)), `${where}: removed ${key(s)} is gone`);
  }
  for (const s of delta.since)
    assert.ok(now.has(key(s)) || delta.removed.includes(s), `${where}: ${key(s)} vanished unsaid`);
}

/** Every resource not named changed is the same object as in `since`; removed ones are gone. */
function assertFleetChanges(result: TranslateResult, where: string): void {
  for (const [fleet, change] of result.fleetChanges ?? []) {
    const config = result.fleets.find((f) => f.fleet === fleet);
    assert.equal(change.config, config, `${where}: the change is of the config returned`);
    for (const type of FLEET_RESOURCE_TYPES) {
      const before = new Map((change.since[type] as { name: string }[]).map((r) => [r.name, r]));
      const named = new Set(change.changed.filter((c) => c.type === type).map((c) => c.name));
      const gone = new Set(change.removed.filter((c) => c.type === type).map((c) => c.name));
      for (const r of (config as FleetConfig)[type] as { name: string }[]) {
        if (!named.has(r.name))
          assert.equal(r, before.get(r.name), `${where}: ${type} ${r.name} changed unsaid`);
        before.delete(r.name);
      }
      assert.deepEqual([...before.keys()].sort(), [...gone].sort(), `${where}: ${type} removed`);
    }
  }
}

for (const file of readdirSync(testdata).filter((f) => f.endsWith('.in.yaml'))) {
  test(`changed routes only: ${file} after random route edits translates like afresh`, () => {
    const next = random(file.length * 31337);
    const pick: Pick = (items) => (items.length === 0 ? undefined : items[Math.floor(next() * items.length)]);
    const cache = createTranslateCache();
    let snapshot: ResourceSnapshot = loadTestdata(file);
    let steps: { http: ListChange<HTTPRoute>[]; grpc: ListChange<GRPCRoute>[] } = { http: [], grpc: [] };
    let since: unknown[] | undefined;
    for (let serial = 0; serial < 80; serial++) {
      const grpc = next() < 0.3;
      const list: readonly RouteObject[] = grpc ? snapshot.grpcRoutes : snapshot.httpRoutes;
      const { removed, added } = pick(edits)!(list, pick, serial);
      const to = applied(list, removed, added);
      const step = { from: list, to, removed, added };
      if (grpc) steps.grpc = [...steps.grpc, step as ListChange<GRPCRoute>].slice(-3);
      else steps.http = [...steps.http, step as ListChange<HTTPRoute>].slice(-3);
      snapshot = {
        ...snapshot,
        ...(grpc ? { grpcRoutes: to as GRPCRoute[] } : { httpRoutes: to as HTTPRoute[] }),
        routeChanges: { httpRoutes: steps.http, grpcRoutes: steps.grpc },
      };
      // Now and then the last translation is skipped (a snapshot read that was not translated), or a Service goes.
      if (next() < 0.15) continue;
      if (next() < 0.05 && snapshot.services.length > 0)
        snapshot = { ...snapshot, services: snapshot.services.slice(1) };
      const cached = translate(snapshot, { ...options, cache });
      assert.deepEqual(
        translation(cached),
        translation(translate(snapshot, options)),
        `${file}, edit ${serial}`,
      );
      assertStatusDelta(cached, since, `${file}, edit ${serial}`);
      assertFleetChanges(cached, `${file}, edit ${serial}`);
      since = cached.statuses;
      if (next() < 0.05) steps = { http: [], grpc: [] };
    }
    if (process.env.SHOW_PATHS) console.error(file, cache.translations, cache.fleetBuilds);
    // Most edits took the changed-routes path (files with both route kinds on one listener may not, nor files
    // with BackendTLSPolicies: a policy's ancestors follow the routes, so those translate whole). With Portico
    // policies, only edits of a route a policy names do.
    const { changedRoutes, full } = cache.translations;
    assert.ok(
      changedRoutes > 0 || /grpc|conflict|kind|backend-tls|trust-bundles/.test(file),
      `${file}: ${changedRoutes} by changed routes, ${full} full`,
    );
  });
}

import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import type { EndpointSlice } from '../../src/api/core.js';
import type { HTTPRoute } from '../../src/api/http-route.js';
import type { RouteObject } from '../../src/api/route-kinds.js';
import type { ResourceSnapshot } from '../../src/api/snapshot.js';
import { createTranslateCache, translate } from '../../src/translate/index.js';
import { loadTestdata, options, random, testdata, translation } from './random-edits.js';

// Route edits that the incremental fleet build handles (exact hostnames added, removed, moved, backends
// changed) mixed with ones it hands to the full build: cached output must be byte-identical to uncached.

const HOSTNAMES = [
  'a.example.com',
  'b.example.com',
  'foo.example.com',
  'exact.example.com',
  'x.api.example.com',
  'other.test',
  'example.com',
];

function step(s: ResourceSnapshot, next: () => number, serial: number): ResourceSnapshot {
  const pick = <T>(items: readonly T[]): T | undefined =>
    items.length === 0 ? undefined : items[Math.floor(next() * items.length)];
  // Either kind's routes; an edit keeps a route's kind, so each list stays of its kind.
  const field = s.grpcRoutes.length > 0 && next() < 0.5 ? 'grpcRoutes' : 'httpRoutes';
  const routes: readonly RouteObject[] = s[field];
  const withRoutes = (list: RouteObject[]): ResourceSnapshot => ({ ...s, [field]: list });
  const r = pick(routes);
  const hostnames = (): string[] => {
    if (next() < 0.1) return pick([['*.example.com'], []])!;
    const out = new Set<string>();
    const n = 1 + Math.floor(next() * 2);
    for (let i = 0; i < n; i++) out.add(next() < 0.5 ? pick(HOSTNAMES)! : `h${serial}-${i}.example.com`);
    return [...out];
  };
  switch (Math.floor(next() * 6)) {
    case 0:
    case 1: {
      // A new route, copied from an existing one (so it attaches somewhere) with exact hostnames.
      if (r === undefined) return s;
      const added = {
        ...r,
        metadata: { ...r.metadata, name: `added-${serial}` },
        spec: { ...r.spec, hostnames: hostnames() },
      } as RouteObject;
      return withRoutes([...routes, added]);
    }
    case 2:
      return r === undefined ? s : withRoutes(routes.filter((x) => x !== r));
    case 3: {
      if (r === undefined) return s;
      const edited = { ...r, spec: { ...r.spec, hostnames: hostnames() } } as RouteObject;
      return withRoutes(routes.map((x) => (x === r ? edited : x)));
    }
    case 4: {
      if (r === undefined) return s;
      const svc = pick(s.services);
      const retarget = <B extends { name: string; port?: number }>(b: B): B =>
        svc === undefined ? b : { ...b, name: svc.metadata.name, port: svc.spec.ports[0]?.port ?? 80 };
      const edited =
        r.kind === 'GRPCRoute'
          ? {
              ...r,
              spec: {
                ...r.spec,
                rules: r.spec.rules.map((rule) => ({ ...rule, backendRefs: rule.backendRefs.map(retarget) })),
              },
            }
          : ({
              ...r,
              spec: {
                ...r.spec,
                rules: r.spec.rules.map((rule) => ({ ...rule, backendRefs: rule.backendRefs.map(retarget) })),
              },
            } as RouteObject);
      return withRoutes(routes.map((x) => (x === r ? edited : x)));
    }
    default: {
      const slice = pick(s.endpointSlices);
      if (slice === undefined) return s;
      const edited: EndpointSlice = {
        ...slice,
        endpoints: [{ addresses: [`10.9.${serial % 250}.1`], conditions: { ready: true } }],
      };
      return { ...s, endpointSlices: s.endpointSlices.map((x) => (x === slice ? edited : x)) };
    }
  }
}

for (const file of readdirSync(testdata).filter((f) => f.endsWith('.in.yaml'))) {
  test(`incremental fleet build: ${file} after random route edits equals the full build, byte for byte`, () => {
    const next = random(file.length * 104729);
    const cache = createTranslateCache();
    let snapshot = loadTestdata(file);
    for (let serial = 0; serial < 80; serial++) {
      snapshot = step(snapshot, next, serial);
      const cached = translate(snapshot, { ...options, cache });
      const fresh = translate(snapshot, options);
      assert.equal(JSON.stringify(cached.fleets), JSON.stringify(fresh.fleets), `${file}, step ${serial}`);
      assert.deepEqual(translation(cached), translation(fresh), `${file}, step ${serial}`);
    }
  });
}

test('incremental fleet build: a route with a new exact hostname takes the incremental path', () => {
  const cache = createTranslateCache();
  const s = loadTestdata('basic.in.yaml');
  translate(s, { ...options, cache });
  const r = s.httpRoutes[0]!;
  const added: HTTPRoute = {
    ...r,
    metadata: { ...r.metadata, name: 'added' },
    spec: { ...r.spec, hostnames: ['new.example.com'] },
  };
  const after = { ...s, httpRoutes: [...s.httpRoutes, added] };
  const cached = translate(after, { ...options, cache });
  assert.equal(cache.fleetBuilds.incremental, 1);
  assert.equal(JSON.stringify(cached.fleets), JSON.stringify(translate(after, options).fleets));
  assert.ok(cached.fleets[0]!.virtualHosts.some((v) => v.hostname === 'new.example.com'));
});

test('incremental fleet build: a throw in the incremental path is counted with its reason and the full build answers', () => {
  const cache = createTranslateCache();
  const s = loadTestdata('basic.in.yaml');
  const first = translate(s, { ...options, cache });
  // Corrupt the recorded build, as a bug in the incremental path would: its next update throws.
  const key = first.fleets[0]!.fleet;
  cache.fleets.get(key)!.ports.clear();
  const r = s.httpRoutes[0]!;
  const added: HTTPRoute = {
    ...r,
    metadata: { ...r.metadata, name: 'added' },
    spec: { ...r.spec, hostnames: ['new.example.com'] },
  };
  const after = { ...s, httpRoutes: [...s.httpRoutes, added] };
  const cached = translate(after, { ...options, cache });
  assert.equal(JSON.stringify(cached.fleets), JSON.stringify(translate(after, options).fleets));
  assert.equal(cache.fleetBuilds.incremental, 0);
  assert.equal(cache.fleetBuilds.full, 2);
  assert.equal(cache.fleetBuilds.incrementalFailures, 1);
  assert.match(cache.fleetBuilds.lastIncrementalFailure ?? '', new RegExp(`^fleet ${key}: `));
});

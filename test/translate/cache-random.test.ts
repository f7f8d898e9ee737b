import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import type { Gateway } from '../../src/api/gateway.js';
import type { GRPCRoute } from '../../src/api/grpc-route.js';
import type { HTTPRoute } from '../../src/api/http-route.js';
import type { ResourceSnapshot } from '../../src/api/snapshot.js';
import { createTranslateCache, type DataPlaneState, translate } from '../../src/translate/index.js';
import { loadTestdata, options, random, testdata, translation } from './random-edits.js';

type Edit = (s: ResourceSnapshot, pick: <T>(items: readonly T[]) => T | undefined) => ResourceSnapshot;

function replaceIn<T>(items: readonly T[], old: T, next: T): T[] {
  return items.map((x) => (x === old ? next : x));
}

// Every edit makes new objects for what it changes and keeps every other object (and unchanged lists) as is,
// the way the providers build snapshots.
const edits: Edit[] = [
  (s) => s,
  (s, pick) => {
    const r = pick(s.httpRoutes);
    if (r === undefined) return s;
    const hostnames = pick([[], ['a.example.com'], ['*.example.com'], ['other.test', 'b.example.com']])!;
    const next: HTTPRoute = { ...r, spec: { ...r.spec, hostnames } };
    return { ...s, httpRoutes: replaceIn(s.httpRoutes, r, next) };
  },
  (s, pick) => {
    const r = pick(s.httpRoutes);
    const g = pick(s.gateways);
    if (r === undefined || g === undefined) return s;
    const section = pick([undefined, ...g.spec.listeners.map((l) => l.name)]);
    const parentRefs = r.spec.parentRefs.map((p) => {
      const { sectionName: _, ...rest } = p;
      return section === undefined ? rest : { ...rest, sectionName: section };
    });
    return { ...s, httpRoutes: replaceIn(s.httpRoutes, r, { ...r, spec: { ...r.spec, parentRefs } }) };
  },
  (s, pick) => {
    const r = pick(s.httpRoutes);
    return r === undefined ? s : { ...s, httpRoutes: s.httpRoutes.filter((x) => x !== r) };
  },
  (s, pick) => {
    const r = pick(s.httpRoutes);
    if (r === undefined) return s;
    const copy = {
      ...r,
      metadata: { ...r.metadata, name: `${r.metadata.name}-copy-${s.httpRoutes.length}` },
    };
    return { ...s, httpRoutes: [...s.httpRoutes, copy] };
  },
  (s, pick) => {
    const r = pick(s.grpcRoutes);
    if (r === undefined) return s;
    const hostnames = pick([[], ['grpc.example.com'], ['*.example.com'], ['api.example.com']])!;
    const next: GRPCRoute = { ...r, spec: { ...r.spec, hostnames } };
    return { ...s, grpcRoutes: replaceIn(s.grpcRoutes, r, next) };
  },
  (s, pick) => {
    const r = pick(s.grpcRoutes);
    return r === undefined ? s : { ...s, grpcRoutes: s.grpcRoutes.filter((x) => x !== r) };
  },
  (s, pick) => {
    const g = pick(s.gateways);
    if (g === undefined || g.spec.listeners.length < 2) return s;
    const next: Gateway = { ...g, spec: { ...g.spec, listeners: g.spec.listeners.slice(0, -1) } };
    return { ...s, gateways: replaceIn(s.gateways, g, next) };
  },
  (s, pick) => {
    const g = pick(s.gateways);
    if (g === undefined) return s;
    const from = pick(['All', 'Same'] as const)!;
    const listeners = g.spec.listeners.map((l) => ({
      ...l,
      allowedRoutes: { ...l.allowedRoutes, namespaces: { from } },
    }));
    return { ...s, gateways: replaceIn(s.gateways, g, { ...g, spec: { ...g.spec, listeners } }) };
  },
  (s, pick) => {
    const n = pick(s.namespaces);
    if (n === undefined) return s;
    const labels = { ...(n.metadata.labels ?? {}), tenant: pick(['a', 'b', 'c'])! };
    return { ...s, namespaces: replaceIn(s.namespaces, n, { ...n, metadata: { ...n.metadata, labels } }) };
  },
  (s, pick) => {
    const svc = pick(s.services);
    return svc === undefined ? s : { ...s, services: s.services.filter((x) => x !== svc) };
  },
];

const dataPlane = (s: ResourceSnapshot): DataPlaneState => ({
  fleets: Object.fromEntries(
    s.gateways.map((g) => [
      `${g.metadata.namespace ?? 'default'}/${g.metadata.name}`,
      {
        addresses: [{ type: 'IPAddress' as const, value: '10.0.0.1' }],
        appliedGateways: {},
        listenerErrors: [],
      },
    ]),
  ),
});

for (const file of readdirSync(testdata).filter((f) => f.endsWith('.in.yaml'))) {
  test(`with a cache: ${file} after random edits translates like without one`, () => {
    const next = random(file.length * 7919);
    const pick = <T>(items: readonly T[]): T | undefined =>
      items.length === 0 ? undefined : items[Math.floor(next() * items.length)];
    const cache = createTranslateCache();
    const original = loadTestdata(file);
    let snapshot = original;
    for (let step = 0; step < 60; step++) {
      // Now and then back to the original objects: memo entries from long ago must still be right.
      snapshot = next() < 0.1 ? original : pick(edits)!(snapshot, pick);
      const cached = translate(snapshot, { ...options, cache }, dataPlane(snapshot));
      const fresh = translate(snapshot, options, dataPlane(snapshot));
      assert.deepEqual(translation(cached), translation(fresh), `${file}, step ${step}`);
    }
  });
}

/** Some fleets' proxies applied some Gateways' generations, with an address and a listener error or not. */
function randomDataPlane(s: ResourceSnapshot, next: () => number): DataPlaneState {
  const fleets: DataPlaneState['fleets'] = {};
  for (const g of s.gateways) {
    if (next() < 0.3) continue;
    const key = `${g.metadata.namespace ?? 'default'}/${g.metadata.name}`;
    const fleet = next() < 0.5 ? key : g.spec.gatewayClassName;
    fleets[fleet] ??= { addresses: [], appliedGateways: {}, listenerErrors: [] };
    if (next() < 0.7) fleets[fleet].appliedGateways[key] = g.metadata.generation ?? 0;
    if (next() < 0.5)
      fleets[fleet].addresses.push({
        type: 'IPAddress',
        value: `10.0.0.${fleets[fleet].addresses.length + 1}`,
      });
    const listener = g.spec.listeners[0];
    if (listener !== undefined && next() < 0.2) {
      fleets[fleet].listenerErrors.push({ gateway: key, listener: listener.name, message: 'address in use' });
    }
  }
  return { fleets };
}

for (const file of readdirSync(testdata).filter((f) => f.endsWith('.in.yaml'))) {
  test(`with a cache: ${file} with the same lists and another data plane translates like without one`, () => {
    const next = random(file.length * 104729);
    const cache = createTranslateCache();
    const original = loadTestdata(file);
    for (let step = 0; step < 20; step++) {
      // A new snapshot object with the very same lists, as a pass that only an Ack started reads.
      const snapshot = { ...original };
      const plane = next() < 0.2 ? undefined : randomDataPlane(snapshot, next);
      const builds = cache.fleetBuilds.full + cache.fleetBuilds.incremental;
      const cached = translate(snapshot, { ...options, cache }, plane);
      const fresh = translate(snapshot, options, plane);
      assert.deepEqual(translation(cached), translation(fresh), `${file}, step ${step}`);
      if (step > 0) {
        const now = cache.fleetBuilds.full + cache.fleetBuilds.incremental;
        assert.equal(now, builds, 'no fleet built again: only the statuses were made');
      }
    }
  });
}

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseYamlFile } from '../../src/api/load.js';
import { buildSnapshot } from '../../src/api/snapshot.js';
import { createTranslateCache, type TranslateOptions, translate } from '../../src/translate/index.js';
import { translation } from './random-edits.js';
import { withTestCertificates } from './testdata-certificates.js';

const options: TranslateOptions = {
  controllerName: 'gateway.portico.io/gatewayclass-controller',
  controllerNamespace: 'portico-gateway-system',
  deployType: 'ControllerNamespace',
};

function load(name: string) {
  const text = withTestCertificates(readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8'));
  return buildSnapshot(parseYamlFile(name, text).objects.map((o) => o.object));
}

test('with a cache: unchanged fleets keep their identity, an edited route rebuilds only its fleet', () => {
  const snapshot = load('merged.in.yaml');
  const cache = createTranslateCache();
  const first = translate(snapshot, { ...options, cache });
  const again = translate(snapshot, { ...options, cache });
  assert.deepEqual(
    again.fleets.map((f, i) => f === first.fleets[i]),
    [true, true],
  );
  const edited = {
    ...snapshot,
    httpRoutes: snapshot.httpRoutes.map((r) =>
      r.metadata.name === 'solo' ? { ...r, spec: { ...r.spec, hostnames: ['solo.example.com'] } } : r,
    ),
  };
  const after = translate(edited, { ...options, cache });
  assert.deepEqual(
    after.fleets.map((f) => [f.fleet, f === again.fleets.find((g) => g.fleet === f.fleet)]),
    [
      ['default/solo', false],
      ['merged-eg', true],
    ],
  );
  assert.deepEqual(translation(after), translation(translate(edited, options)));
});

test('with a cache: a changed EndpointSlice reaches the fleet config', () => {
  const snapshot = load('backends.in.yaml');
  const cache = createTranslateCache();
  translate(snapshot, { ...options, cache });
  const edited = {
    ...snapshot,
    endpointSlices: snapshot.endpointSlices.map((s) =>
      s.metadata.name === 'shared-x' ? { ...s, endpoints: [{ addresses: ['10.9.9.9'], conditions: {} }] } : s,
    ),
  };
  const after = translate(edited, { ...options, cache });
  assert.deepEqual(translation(after), translation(translate(edited, options)));
  const endpoints = after.fleets[0]!.endpoints.find((e) => e.name === 'platform/shared:80');
  assert.deepEqual(endpoints?.endpoints, [{ address: '10.9.9.9', port: 8000 }]);
});

test('with a cache: a route added to a fleet keeps the other VirtualHost objects (discovery re-sends one)', () => {
  const snapshot = load('merged.in.yaml');
  const cache = createTranslateCache();
  const first = translate(snapshot, { ...options, cache });
  const template = snapshot.httpRoutes.find((r) => r.metadata.name !== 'solo')!;
  const added = {
    ...template,
    metadata: { ...template.metadata, name: 'added' },
    spec: { ...template.spec, hostnames: ['added.example.com'] },
  };
  const edited = { ...snapshot, httpRoutes: [...snapshot.httpRoutes, added] };
  const after = translate(edited, { ...options, cache });
  const fleet = after.fleets.find((f) => f.fleet === 'merged-eg')!;
  const before = first.fleets.find((f) => f.fleet === 'merged-eg')!;
  assert.notEqual(fleet, before);
  const reused = fleet.virtualHosts.map((v) => [v.name, before.virtualHosts.includes(v)]);
  assert.ok(
    reused.some(([, same]) => same),
    JSON.stringify(reused),
  );
  assert.ok(
    reused.some(([name, same]) => String(name).endsWith('/added.example.com') && !same),
    JSON.stringify(reused),
  );
  assert.deepEqual(translation(after), translation(translate(edited, options)));
});

test('with a cache: a ListenerSet listener that admits more namespaces takes routes the memo had refused', () => {
  const snapshot = load('listener-sets.in.yaml');
  const cache = createTranslateCache();
  translate(snapshot, { ...options, cache });
  // allowedRoutes only: every listener stays as attachable, so only the ListenerSet object says it changed.
  const edited = {
    ...snapshot,
    listenerSets: snapshot.listenerSets.map((ls) => {
      if (ls.metadata.name !== 'team-a') return ls;
      const listeners = ls.spec.listeners.map((l) =>
        l.name === 'http'
          ? { ...l, allowedRoutes: { ...l.allowedRoutes, namespaces: { from: 'All' as const } } }
          : l,
      );
      return { ...ls, metadata: { ...ls.metadata, generation: 3 }, spec: { ...ls.spec, listeners } };
    }),
  };
  const after = translate(edited, { ...options, cache });
  assert.deepEqual(translation(after), translation(translate(edited, options)));
  const route = after.statuses.find((s) => s.kind === 'HTTPRoute' && s.name === 'ls-other-ns')!;
  assert.match(JSON.stringify(route.status), /"reason":"Accepted"/);
});

test('with a cache: a Gateway that stops admitting ListenerSets closes their ports; a route change alone keeps them', () => {
  const snapshot = load('listener-sets.in.yaml');
  const cache = createTranslateCache();
  const first = translate(snapshot, { ...options, cache });
  const withoutRoute = {
    ...snapshot,
    httpRoutes: snapshot.httpRoutes.filter((r) => r.metadata.name !== 'gw-route'),
  };
  const routesOnly = translate(withoutRoute, { ...options, cache });
  assert.deepEqual(translation(routesOnly), translation(translate(withoutRoute, options)));
  const ports = (r: typeof first) =>
    r.fleets.find((f) => f.fleet === 'infra/edge')!.listeners.map((l) => l.port);
  assert.deepEqual(ports(routesOnly), ports(first));
  const closed = {
    ...withoutRoute,
    gateways: withoutRoute.gateways.map((g) => {
      if (g.metadata.name !== 'edge') return g;
      const { allowedListeners: _, ...spec } = g.spec;
      return { ...g, spec };
    }),
  };
  const after = translate(closed, { ...options, cache });
  assert.deepEqual(translation(after), translation(translate(closed, options)));
  assert.deepEqual(ports(after), [80]);
  const teamA = after.statuses.find((s) => s.kind === 'ListenerSet' && s.name === 'team-a')!;
  assert.match(JSON.stringify(teamA.status), /"reason":"NotAllowed"/);
});

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

// GatewayClass SupportedVersion: the installed Gateway API CRDs against the release this build is made for.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GATEWAY_API_BUNDLE_VERSION, type InstalledCrds } from '../../src/api/gateway-api-bundle.js';
import { parseYamlFile } from '../../src/api/load.js';
import { buildSnapshot } from '../../src/api/snapshot.js';
import { createTranslateCache, type ObjectStatus, translate } from '../../src/translate/index.js';
import { supportedVersionVerdict } from '../../src/translate/supported-version.js';

const all = (version: string | null): InstalledCrds => ({
  versions: {
    gatewayclasses: version,
    gateways: version,
    httproutes: version,
    grpcroutes: version,
    referencegrants: version,
  },
});

test('the release it is built for, or a newer one, is supported', () => {
  assert.equal(GATEWAY_API_BUNDLE_VERSION, 'v1.7.0');
  for (const v of ['v1.7.0', 'v1.7.2', 'v1.8.0', 'v2.0.0']) {
    const verdict = supportedVersionVerdict(all(v));
    assert.equal(verdict.ok, true, v);
    assert.equal(verdict.reason, 'SupportedVersion');
    assert.match(verdict.message, new RegExp(v.replaceAll('.', '\\.')));
  }
});

test('an older minor, a missing CRD or a CRD without a bundle version is UnsupportedVersion, naming what was found', () => {
  const older = supportedVersionVerdict(all('v1.6.3'));
  assert.equal(older.ok, false);
  assert.equal(older.reason, 'UnsupportedVersion');
  assert.match(
    older.message,
    /older than v1\.7\.0, which this controller is built for: v1\.6\.3 \(gatewayclasses, gateways, httproutes, grpcroutes, referencegrants\)/,
  );
  const mixed = supportedVersionVerdict({
    versions: { ...all('v1.7.0').versions, grpcroutes: null, referencegrants: 'v1.5.1', gateways: '' },
  });
  assert.equal(mixed.ok, false);
  assert.match(mixed.message, /v1\.5\.1 \(referencegrants\)/);
  assert.match(mixed.message, /no bundle-version annotation \(gateways\)/);
  assert.match(mixed.message, /not installed: grpcroutes/);
  assert.match(mixed.message, /The kinds that are installed keep working/);
  assert.equal(supportedVersionVerdict(all('v0.8.0')).ok, false);
  assert.equal(supportedVersionVerdict(all('v1.10')).ok, false);
});

const OBJECTS = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg, generation: 3}
spec: {controllerName: gateway.portico.io/gatewayclass-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default, generation: 1}
spec:
  gatewayClassName: eg
  listeners: [{name: http, protocol: HTTP, port: 80}]
`;
const options = {
  controllerName: 'gateway.portico.io/gatewayclass-controller',
  controllerNamespace: 'sys',
  deployType: 'ControllerNamespace' as const,
};

function classConditions(statuses: readonly ObjectStatus[]) {
  const status = statuses.find((s) => s.kind === 'GatewayClass')!;
  return (
    status.status.conditions as { type: string; status: string; reason: string; observedGeneration: number }[]
  ).map((c) => `${c.type}=${c.status}/${c.reason}@${c.observedGeneration}`);
}

test('every class says SupportedVersion when the CRDs are known, and nothing when they are not (standalone)', () => {
  const snapshot = buildSnapshot(parseYamlFile('a.yaml', OBJECTS).objects.map((o) => o.object));
  assert.deepEqual(classConditions(translate(snapshot, options).statuses), ['Accepted=True/Accepted@3']);
  assert.deepEqual(
    classConditions(translate({ ...snapshot, installedCrds: all('v1.6.3') }, options).statuses),
    ['Accepted=True/Accepted@3', 'SupportedVersion=False/UnsupportedVersion@3'],
  );
  // The Gateway is translated and served all the same.
  const result = translate({ ...snapshot, installedCrds: all(null) }, options);
  assert.equal(result.fleets.length, 1);
});

test('CRDs changing alone (the very same object lists) change the class status in a cached translation', () => {
  const snapshot = buildSnapshot(parseYamlFile('a.yaml', OBJECTS).objects.map((o) => o.object));
  const cache = createTranslateCache();
  const first = translate({ ...snapshot, installedCrds: all('v1.6.3') }, { ...options, cache });
  assert.deepEqual(classConditions(first.statuses)[1], 'SupportedVersion=False/UnsupportedVersion@3');
  const again = translate({ ...snapshot, installedCrds: all('v1.7.0') }, { ...options, cache });
  assert.deepEqual(classConditions(again.statuses)[1], 'SupportedVersion=True/SupportedVersion@3');
});

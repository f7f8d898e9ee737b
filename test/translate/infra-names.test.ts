// Two fleet keys whose infrastructure names collide (same 48-character prefix, same 32-bit hash) never share a
// Deployment or a certificate: the fleet with the older Gateway keeps the name, the other is reported.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseYamlFile } from '../../src/api/load.js';
import { buildSnapshot } from '../../src/api/snapshot.js';
import { fleetInfraName } from '../../src/ir/fleet-infra.js';
import { type TranslateOptions, translate } from '../../src/translate/index.js';

const options: TranslateOptions = {
  controllerName: 'gateway.portico.io/gatewayclass-controller',
  controllerNamespace: 'portico-gateway-system',
  deployType: 'ControllerNamespace',
};
// Found offline by a birthday search over the suffix: both are proxy-tenant-a-ggg…g-a3cb2abb. The older one
// sorts after the newer, so age, not key order, decides.
const PREFIX = `${'g'.repeat(39)}-`;
const OLDER = `${PREFIX}2ib0`;
const NEWER = `${PREFIX}1s4r`;

function gateway(name: string, created: string): string {
  return `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ${name}, namespace: tenant-a, generation: 1, creationTimestamp: "${created}"}
spec:
  gatewayClassName: eg
  listeners:
  - {name: http, protocol: HTTP, port: 80}
`;
}

function snapshot(newerFirstInFile: boolean) {
  const gateways = [gateway(OLDER, '2026-01-01T00:00:00Z'), gateway(NEWER, '2026-02-01T00:00:00Z')];
  if (newerFirstInFile) gateways.reverse();
  const text = [
    `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec:
  controllerName: gateway.portico.io/gatewayclass-controller
`,
    ...gateways,
  ].join('---\n');
  return buildSnapshot(parseYamlFile('collision.yaml', text).objects.map((o) => o.object));
}

test('the keys used here do collide', () => {
  assert.equal(fleetInfraName(`tenant-a/${OLDER}`), fleetInfraName(`tenant-a/${NEWER}`));
});

for (const newerFirstInFile of [false, true]) {
  test(`a colliding fleet gets no infrastructure and its Gateway names the fleet holding the name (newer first: ${newerFirstInFile})`, () => {
    const result = translate(snapshot(newerFirstInFile), options);
    assert.deepEqual(
      result.infra.map((i) => i.fleet),
      [`tenant-a/${OLDER}`],
    );
    assert.deepEqual(
      result.fleets.map((f) => f.fleet),
      [`tenant-a/${OLDER}`],
    );
    const status = result.statuses.find((s) => s.kind === 'Gateway' && s.name === NEWER)!;
    const conditions = status.status.conditions as {
      type: string;
      status: string;
      reason: string;
      message: string;
    }[];
    const programmed = conditions.find((c) => c.type === 'Programmed')!;
    assert.equal(programmed.status, 'False');
    assert.equal(programmed.reason, 'Invalid');
    assert.match(
      programmed.message,
      new RegExp(`already used by fleet tenant-a/${OLDER} \\(Gateway tenant-a/${OLDER}\\)`),
    );
    const listener = (status.status.listeners as { conditions: typeof conditions }[])[0]!;
    assert.equal(listener.conditions.find((c) => c.type === 'Programmed')?.reason, 'Invalid');
  });
}

// Gateway API v1.7's GatewayNameMaximumLength: a Gateway may be named with 253 characters. Every name and label
// derived from it must still be legal (63 characters at most), and two such Gateways must never share any.
const LONG = `gateway-name-maximum-length-${'a'.repeat(225)}`;
const LONG_TWIN = `${LONG.slice(0, -1)}b`;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

for (const deployType of ['ControllerNamespace', 'GatewayNamespace'] as const) {
  test(`253-character Gateway names: every derived name and label is legal and their infrastructure never collides (${deployType})`, () => {
    const text = [
      `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec:
  controllerName: gateway.portico.io/gatewayclass-controller
`,
      gateway(LONG, '2026-01-01T00:00:00Z'),
      gateway(LONG_TWIN, '2026-02-01T00:00:00Z'),
    ].join('---\n');
    const snap = buildSnapshot(parseYamlFile('long.yaml', text).objects.map((o) => o.object));
    const result = translate(snap, { ...options, deployType });
    assert.equal(result.infra.length, 2);
    for (const infra of result.infra) {
      assert.ok(infra.name.length <= 63, infra.name);
      assert.match(infra.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      for (const [key, value] of Object.entries({ ...infra.labels, ...infra.propagated.labels })) {
        assert.ok(value.length <= 63, `${key}: ${value}`);
        assert.match(value, LABEL_VALUE, key);
      }
    }
    const [one, two] = result.infra;
    assert.notEqual(one!.name, two!.name);
    assert.notDeepEqual(one!.labels, two!.labels);
    assert.notEqual(
      one!.propagated.labels['gateway.networking.k8s.io/gateway-name'],
      two!.propagated.labels['gateway.networking.k8s.io/gateway-name'],
    );
    // Neither is told the other holds its infrastructure.
    for (const name of [LONG, LONG_TWIN]) {
      const status = result.statuses.find((s) => s.kind === 'Gateway' && s.name === name);
      assert.ok(status, name);
      assert.doesNotMatch(JSON.stringify(status), /already used by fleet/);
    }
  });
}

// The command line each standalone fleet's proxy runs with: what its DataPlaneProxies say about the proxies
// (workers up to the cap, drain, log level, access log, tracing) reaches `portico proxy`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FleetConfig } from '../../../src/ir/fleet-config.js';
import type { FleetInfra } from '../../../src/ir/fleet-infra.js';
import type { StandaloneDiscoveryTls } from '../../../src/provider/standalone/discovery-tls.js';
import { proxySpecs } from '../../../src/provider/standalone/host-fleets.js';

const tls = {
  caFile: '/state/ca.crt',
  fleetFiles: (fleet: string) => ({ cert: `/state/${fleet}.crt`, key: `/state/${fleet}.key` }),
} as StandaloneDiscoveryTls;

function infra(fleet: string, extra: Partial<FleetInfra>): FleetInfra {
  return {
    fleet,
    name: fleet,
    namespace: 'portico-gateway-system',
    labels: {},
    propagated: { labels: {}, annotations: {} },
    gateways: [fleet],
    ports: [],
    ...extra,
  };
}

const flag = (args: readonly string[], name: string) =>
  args.includes(name) ? args[args.indexOf(name) + 1] : undefined;

test("a fleet's parameters reach its proxy's flags; workers stop at the cap", () => {
  const fleets = [{ fleet: 'team/a' }, { fleet: 'team/b' }] as FleetConfig[];
  const specs = proxySpecs(
    fleets,
    [
      infra('team/a', { workers: 8, drainSeconds: 300, logLevel: 'debug', accessLog: { format: 'off' } }),
      infra('team/b', { workers: 1 }),
    ],
    new Map([
      ['team/a', '127.0.10.1'],
      ['team/b', '127.0.10.2'],
    ]),
    { discoveryAddress: '127.0.0.1:18000', tls, proxyWorkersMax: 4, proxyDrainSeconds: 2 },
  );
  const [a, b] = specs;
  assert.deepEqual(a!.settings, {
    logLevel: 'debug',
    accessLog: { format: 'off' },
    drainSeconds: 2,
    maxDrainSeconds: 300,
    workers: 4,
  });
  assert.equal(flag(a!.args, '--bind-address'), '127.0.10.1');
  assert.deepEqual(a!.admin, { host: '127.0.10.1', port: 19000 }, 'where a settings change is sent');
  assert.equal(b!.settings?.workers, 1);
  assert.equal(b!.settings?.maxDrainSeconds, 60, 'the proxy default when none is set');
});

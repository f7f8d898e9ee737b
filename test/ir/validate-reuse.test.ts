import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FleetConfig } from '../../src/ir/fleet-config.js';
import { validateFleetConfig } from '../../src/ir/validate.js';
import { PorticoError } from '../../src/platform/errors.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';

function base(): FleetConfig {
  return simpleFleet(
    [vhost(80, 'a.test', [route(forward(['default/a:80']))])],
    [upstream('default/a:80', [8080])],
  ) as FleetConfig;
}

function rejected(config: unknown, pattern: RegExp): void {
  assert.throws(
    () => validateFleetConfig(config),
    (error: unknown) =>
      error instanceof PorticoError && error.code === 'E_FLEET_CONFIG' && pattern.test(error.message),
  );
}

// Validation skips resource objects that passed before; these configs reuse them the way discovery does.
describe('validateFleetConfig over configs that share resource objects', () => {
  it('still rejects a bad new resource next to reused ones', () => {
    const first = base();
    validateFleetConfig(first);
    const badHost = { ...first.virtualHosts[0]!, name: 'port-80/b.test', hostname: 'b..test' };
    rejected({ ...first, virtualHosts: [...first.virtualHosts, badHost] }, /^virtualHosts\[1\]\.hostname/);
  });

  it('still checks references between reused resources', () => {
    const first = base();
    validateFleetConfig(first);
    rejected({ ...first, clusters: [] }, /unknown cluster 'default\/a:80'/);
    rejected({ ...first, listeners: [] }, /unknown listener 'port-80'/);
    rejected({ ...first, clusters: [...first.clusters, first.clusters[0]!] }, /duplicate name/);
  });

  it('rejects a resource that failed before when it comes again', () => {
    const first = base();
    const bad = { ...first.clusters[0]!, protocol: 'gopher' };
    rejected({ ...first, clusters: [bad] }, /^clusters\[0\]\.protocol/);
    rejected({ ...first, clusters: [bad] }, /^clusters\[0\]\.protocol/);
  });

  it('gives the same answer as a fresh copy for a config of reused objects', () => {
    const first = base();
    validateFleetConfig(first);
    const next = { ...first, virtualHosts: [...first.virtualHosts] };
    assert.equal(validateFleetConfig(next), next);
    assert.deepEqual(validateFleetConfig(structuredClone(next)), next);
  });
});

// A config that comes with how it changed (a discovery delta) is validated, compiled and named for metrics by
// that change alone, with the tables of the snapshot serving updated in place; whatever the changes (VirtualHosts
// and clusters added, changed, removed, a bad resource refused alone), the result answers like a fresh build.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FleetConfig, VirtualHost } from '../../src/ir/fleet-config.js';
import { type FleetConfigChange, patchFleetConfig } from '../../src/ir/fleet-config-patch.js';
import { validateFleetResources } from '../../src/ir/validate.js';
import { lookupHost } from '../../src/proxy/routing/route-table.js';
import { compileSnapshot, type Snapshot } from '../../src/proxy/routing/snapshot.js';
import { createLiveNames } from '../../src/proxy/telemetry/live-names.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { random } from '../translate/random-edits.js';

const HOSTS = [
  'a.example.com',
  'b.example.com',
  '*.example.com',
  'x.y.example.com',
  '*.y.example.com',
  '*',
  'c.test',
];
const PORTS = [80, 8080];
const CLUSTERS = ['default/a:80', 'default/b:80', 'default/c:80'];

type Change = Pick<FleetConfigChange, 'changed' | 'removed'>;
type Pick_ = <T>(items: readonly T[]) => T;

/** One random change: a VirtualHost put in (new or changed, now and then invalid) or taken out, or a cluster. */
function randomChange(
  config: FleetConfig,
  pick: Pick_,
  serial: number,
): {
  resources: { type: 'virtualHosts' | 'clusters' | 'endpoints'; name: string; value: { name: string } }[];
  removed: Change['removed'];
} {
  const roll = pick([0, 1, 2, 3, 4]);
  if (roll <= 2) {
    const port = pick(PORTS);
    const host = pick(HOSTS);
    const routes = [route(forward([pick(CLUSTERS)]), { path: { type: 'PathPrefix', value: `/${serial}` } })];
    const v: VirtualHost = vhost(port, host, routes);
    // Now and then a VirtualHost the proxy must refuse alone (a name that is not its listener's and host).
    const value = pick([true, true, true, false])
      ? v
      : { ...v, name: `port-${port}/${host}`, hostname: 'BAD..host' };
    return { resources: [{ type: 'virtualHosts', name: value.name, value }], removed: [] };
  }
  if (roll === 3 && config.virtualHosts.length > 0) {
    return { resources: [], removed: [{ type: 'virtualHosts', name: pick(config.virtualHosts).name }] };
  }
  const name = pick(CLUSTERS);
  const u = upstream(name, [8000 + (serial % 7)]);
  if (pick([true, false])) {
    return {
      resources: [
        { type: 'clusters', name, value: u.cluster },
        { type: 'endpoints', name, value: u.endpoints },
      ],
      removed: [],
    };
  }
  return {
    resources: [],
    removed: [
      { type: 'clusters', name },
      { type: 'endpoints', name },
    ],
  };
}

/** What a snapshot answers: each listener's host for each probe, and each cluster's endpoints. */
function answers(s: Snapshot): unknown {
  const hosts: Record<string, string | undefined> = {};
  for (const [name, l] of s.listeners) {
    for (const h of [
      'a.example.com',
      'b.example.com',
      'q.example.com',
      'x.y.example.com',
      'z.y.example.com',
      'c.test',
      'none.org',
    ]) {
      hosts[`${name} ${h}`] = lookupHost(l.hosts, h)?.name;
    }
  }
  const clusters = Object.fromEntries([...s.clusters].map(([n, c]) => [n, [c.protocol, c.endpoints]]));
  return { hosts, clusters, vhosts: [...s.vhosts.keys()].sort() };
}

test('changes applied by what they name answer like the config built afresh', () => {
  const next = random(4242);
  const pick: Pick_ = (items) => items[Math.floor(next() * items.length)]!;
  const listeners = PORTS.map((p) => ({ listener: listener(p), vhosts: [] }));
  let config: FleetConfig = fleet(
    listeners,
    CLUSTERS.map((c) => upstream(c, [8000])),
  );
  let snapshot = compileSnapshot(config, '0', new WeakMap());
  const cache = new WeakMap();
  const live = createLiveNames();
  live.update(config);
  for (let serial = 1; serial <= 400; serial++) {
    const { resources, removed } = randomChange(config, pick, serial);
    const patched = patchFleetConfig(config, resources, removed);
    const change: FleetConfigChange = {
      since: config,
      config: patched,
      changed: resources.map(({ type, name }) => ({ type, name })),
      removed,
    };
    const byChange = validateFleetResources(patched, config, change);
    const whole = validateFleetResources(patched, config);
    assert.deepEqual(byChange.config, whole.config, `edit ${serial}: validated alike`);
    assert.deepEqual(
      byChange.rejected.map((r) => r.name),
      whole.rejected.map((r) => r.name),
      `edit ${serial}: refused alike`,
    );
    const used = byChange.config === patched ? change : undefined;
    snapshot = compileSnapshot(byChange.config, String(serial), cache, snapshot, used);
    const fresh = compileSnapshot(byChange.config, String(serial));
    assert.deepEqual(answers(snapshot), answers(fresh), `edit ${serial}: answers alike`);
    live.update(byChange.config, used);
    const names = live.names();
    const routeNames = new Set(byChange.config.virtualHosts.flatMap((v) => v.routes.map((r) => r.name)));
    for (const n of routeNames) assert.ok(names.routes.has(n), `edit ${serial}: route ${n} live`);
    for (const v of config.virtualHosts)
      for (const r of v.routes)
        assert.equal(names.routes.has(r.name), routeNames.has(r.name), `edit ${serial}: ${r.name}`);
    config = byChange.config;
  }
});

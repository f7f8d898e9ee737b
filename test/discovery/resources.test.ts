import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  assembleFleetConfig,
  diffResources,
  parseResource,
  type ServedResourceSet,
  toResourceSet,
  updateResourceSet,
} from '../../src/discovery/resources.js';
import { patchFleetConfig } from '../../src/ir/fleet-config-patch.js';
import { sampleFleet, virtualHost } from './fixtures.js';

test('a fleet splits into resources and reassembles into the same config', () => {
  const config = sampleFleet('default/eg', [
    virtualHost('b.example.com', 'default/a:80'),
    virtualHost('a.example.com', 'default/a:80'),
  ]);
  const received = [...toResourceSet(config).values()]
    .reverse()
    .map((r) => parseResource(r.type, r.name, Buffer.from(r.json)));
  assert.deepEqual(assembleFleetConfig('default/eg', received), config);
});

test('the diff holds only changed, added and removed resources', () => {
  const before = toResourceSet(
    sampleFleet('f', [virtualHost('a.example.com', 'c'), virtualHost('b.example.com', 'c')]),
  );
  const after = toResourceSet(
    sampleFleet('f', [virtualHost('a.example.com', 'c', '/x'), virtualHost('d.example.com', 'c')]),
  );
  const delta = diffResources(before, after);
  assert.deepEqual(
    delta.changed.map((r) => `${r.type}/${r.name}`),
    // The listener is untouched: its VirtualHosts name it, it does not list them.
    ['virtualHosts/port-80/a.example.com', 'virtualHosts/port-80/d.example.com'],
  );
  assert.deepEqual(delta.removed, [{ type: 'virtualHosts', name: 'port-80/b.example.com' }]);
  assert.deepEqual(diffResources(after, after), { changed: [], removed: [] });
});

test('updating the served set in place yields the same delta as the full diff, and nothing for reused objects', () => {
  const first = sampleFleet('f', [virtualHost('a.example.com', 'c'), virtualHost('b.example.com', 'c')]);
  const set: ServedResourceSet = new Map();
  assert.equal(updateResourceSet(set, first).changed.length, toResourceSet(first).size);
  // Reused objects are skipped; an equal but new object is no change either.
  const same = { ...first, virtualHosts: [first.virtualHosts[0]!, { ...first.virtualHosts[1]! }] };
  assert.deepEqual(updateResourceSet(set, same), { changed: [], removed: [] });
  const after = sampleFleet('f', [
    virtualHost('a.example.com', 'c', '/x'),
    virtualHost('d.example.com', 'c'),
  ]);
  const delta = updateResourceSet(set, after);
  const expected = diffResources(toResourceSet(same), toResourceSet(after));
  assert.deepEqual(
    delta.changed.map(({ type, name, json }) => ({ type, name, json })),
    expected.changed,
  );
  assert.deepEqual(delta.removed, expected.removed);
  assert.deepEqual(
    [...set.values()].map((r) => r.json).sort(),
    [...toResourceSet(after).values()].map((r) => r.json).sort(),
  );
});

test('with the previous config, the in-place update skips found objects and gives the same deltas', () => {
  const hosts = ['a', 'b', 'c', 'd', 'e', 'f'].map((h) => virtualHost(`${h}.example.com`, 'c'));
  const configs = [
    sampleFleet('f', hosts),
    sampleFleet('f', [hosts[0]!, virtualHost('aa.example.com', 'c'), ...hosts.slice(1)]),
    sampleFleet('f', [hosts[0]!, hosts[2]!, virtualHost('d.example.com', 'c', '/x'), hosts[5]!]),
    sampleFleet('f', [
      virtualHost('0.example.com', 'c'),
      hosts[0]!,
      hosts[5]!,
      virtualHost('z.example.com', 'c'),
    ]),
  ];
  const withPrevious: ServedResourceSet = new Map();
  const without: ServedResourceSet = new Map();
  let previous: (typeof configs)[number] | undefined;
  for (const config of configs) {
    const fast = updateResourceSet(withPrevious, config, previous);
    const slow = updateResourceSet(without, config);
    const names = (d: typeof fast) => ({
      changed: d.changed.map((r) => `${r.type}/${r.name}:${r.json}`).sort(),
      removed: d.removed.map((r) => `${r.type}/${r.name}`).sort(),
    });
    assert.deepEqual(names(fast), names(slow));
    previous = config;
  }
  assert.deepEqual([...withPrevious.keys()].sort(), [...without.keys()].sort());
});

test('a delta patched into the applied config equals the config assembled from all resources', () => {
  const before = sampleFleet(
    'f',
    ['b', 'd', 'f'].map((h) => virtualHost(`${h}.example.com`, 'c')),
  );
  const after = sampleFleet('f', [
    virtualHost('a.example.com', 'c'),
    virtualHost('b.example.com', 'c', '/x'),
    virtualHost('e.example.com', 'c'),
    virtualHost('f.example.com', 'c'),
  ]);
  const received = (config: typeof before) =>
    [...toResourceSet(config).values()].map((r) => parseResource(r.type, r.name, Buffer.from(r.json)));
  const applied = assembleFleetConfig('f', received(before));
  const delta = diffResources(toResourceSet(before), toResourceSet(after));
  const changed = delta.changed.map((r) => parseResource(r.type, r.name, Buffer.from(r.json)));
  const patched = patchFleetConfig(applied, changed, delta.removed);
  assert.deepEqual(patched, assembleFleetConfig('f', received(after)));
  // Untouched lists and resources stay the applied objects; the applied config itself is left alone.
  assert.equal(patched.clusters, applied.clusters);
  assert.equal(patched.virtualHosts[3], applied.virtualHosts[2]);
  assert.equal(applied.virtualHosts.length, 3);
});

test('a malformed resource is an error naming it', () => {
  assert.throws(
    () => parseResource('routes', 'x', Buffer.from('{}')),
    /resource routes\/x: unknown resource type/,
  );
  assert.throws(
    () => parseResource('clusters', 'c', Buffer.from('{nope')),
    /resource clusters\/c: body is not JSON/,
  );
  assert.throws(
    () => parseResource('clusters', 'c', Buffer.from('[1]')),
    /resource clusters\/c: body is not a JSON object/,
  );
  assert.throws(
    () => parseResource('clusters', 'c', Buffer.from('{"name":"d"}')),
    /resource clusters\/c: body field 'name' does not match/,
  );
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  assembleFleetConfig,
  diffResources,
  parseResource,
  toResourceSet,
} from '../../src/discovery/resources.js';
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
    ['virtualHosts/port-80/a.example.com', 'virtualHosts/port-80/d.example.com', 'listeners/port-80'],
  );
  assert.deepEqual(delta.removed, [{ type: 'virtualHosts', name: 'port-80/b.example.com' }]);
  assert.deepEqual(diffResources(after, after), { changed: [], removed: [] });
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

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApiObject } from '../../../src/api/kinds.js';
import { buildSnapshot } from '../../../src/api/snapshot.js';
import { reuseUnchangedLists } from '../../../src/provider/standalone/snapshot-reuse.js';

const service = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 's', namespace: 'default' },
  spec: { ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
} as unknown as ApiObject;
const route = (name: string) =>
  ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace: 'default' },
    spec: { parentRefs: [], rules: [] },
  }) as unknown as ApiObject;

test('lists holding the same objects are the previous lists; a changed list is the new one', () => {
  const a = route('a');
  const first = buildSnapshot([service, a]);
  const next = reuseUnchangedLists(first, buildSnapshot([service, a, route('b')]));
  assert.equal(next.services, first.services);
  assert.equal(next.endpointSlices, first.endpointSlices);
  assert.notEqual(next.httpRoutes, first.httpRoutes);
  assert.deepEqual(
    next.httpRoutes.map((r) => r.metadata.name),
    ['a', 'b'],
  );
  assert.equal(reuseUnchangedLists(undefined, first), first);
});

// The log lines a pass's statuses make: conditions that turned False (or came False), and back True, once each.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conditionChanges } from '../../src/runner/condition-changes.js';
import { statusKey } from '../../src/runner/status-stamps.js';
import type { ObjectStatus } from '../../src/translate/types.js';

const cond = (type: string, status: string, reason: string, message = reason) => ({
  type,
  status,
  reason,
  message,
});

function route(parents: unknown[]): ObjectStatus {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    namespace: 'default',
    name: 'web',
    generation: 2,
    status: { parents },
  };
}

function gateway(conditions: unknown[], listeners: unknown[] = []): ObjectStatus {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    namespace: 'default',
    name: 'eg',
    generation: 1,
    status: { conditions, listeners },
  };
}

const byKey = (statuses: ObjectStatus[]) => new Map(statuses.map((s) => [statusKey(s), s]));
const texts = (previous: ObjectStatus[], next: ObjectStatus[]) =>
  conditionChanges(byKey(previous), next).map((c) => `${c.trouble ? 'warn' : 'info'} ${c.text}`);

const parent = (resolved: ReturnType<typeof cond>) => ({
  parentRef: { namespace: 'default', name: 'eg', sectionName: 'http' },
  controllerName: 'gateway.portico.io/gatewayclass-controller',
  conditions: [cond('Accepted', 'True', 'Accepted'), resolved],
});

test('a route whose backend goes missing, then comes back: one warning, then one line that it is right again', () => {
  const good = route([parent(cond('ResolvedRefs', 'True', 'ResolvedRefs'))]);
  const missing = route([
    parent(cond('ResolvedRefs', 'False', 'BackendNotFound', 'Service default/api not found')),
  ]);
  assert.deepEqual(texts([good], [missing]), [
    'warn HTTPRoute default/web: parent default/eg/http: ResolvedRefs=False (BackendNotFound): Service default/api not found',
  ]);
  assert.deepEqual(texts([missing], [missing]), [], 'the same problem again says nothing');
  assert.deepEqual(texts([missing], [good]), [
    'info HTTPRoute default/web: parent default/eg/http: ResolvedRefs=True again (ResolvedRefs)',
  ]);
});

test('a new object that starts wrong is told at once; one that starts right, or waits (Pending), says nothing', () => {
  assert.deepEqual(texts([], [gateway([cond('Accepted', 'False', 'InvalidParameters', 'no such class')])]), [
    'warn Gateway default/eg: Accepted=False (InvalidParameters): no such class',
  ]);
  assert.deepEqual(texts([], [gateway([cond('Accepted', 'True', 'Accepted')])]), []);
  const pending = gateway([cond('Programmed', 'False', 'Pending', 'Waiting for a ready proxy')]);
  assert.deepEqual(texts([], [pending]), []);
  assert.deepEqual(texts([pending], [gateway([cond('Programmed', 'True', 'Programmed')])]), []);
});

test('listener conditions name their listener; Conflicted is trouble when True', () => {
  const listener = (conflicted: string) => ({
    name: 'https',
    conditions: [cond('Conflicted', conflicted, conflicted === 'True' ? 'HostnameConflict' : 'NoConflicts')],
  });
  const conflicted = gateway([], [listener('True')]);
  assert.deepEqual(texts([gateway([], [listener('False')])], [conflicted]), [
    'warn Gateway default/eg: listener https: Conflicted=True (HostnameConflict): HostnameConflict',
  ]);
  assert.deepEqual(texts([conflicted], [gateway([], [listener('False')])]), [
    'info Gateway default/eg: listener https: Conflicted=False again (NoConflicts)',
  ]);
});

test('a problem whose reason or message changes is told again', () => {
  const a = gateway([cond('Programmed', 'False', 'Invalid', 'port 80 in use')]);
  const b = gateway([cond('Programmed', 'False', 'Invalid', 'port 8080 in use')]);
  assert.deepEqual(texts([a], [b]), [
    'warn Gateway default/eg: Programmed=False (Invalid): port 8080 in use',
  ]);
});

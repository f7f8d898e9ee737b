// Policy attachment for any kind: who holds a target, precedence from rule to Gateway, and what each policy's
// status says (Accepted, Conflicted, TargetNotFound, Invalid; ancestors at most 16).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type AttachablePolicy,
  attachPolicies,
  listenerHolder,
  type PolicyTarget,
  ruleHolder,
  targetKey,
} from '../../src/translate/policy-attachment.js';

const GROUP = 'gateway.networking.k8s.io';

function policy(
  name: string,
  created: string,
  refs: { kind: 'Gateway' | 'ListenerSet' | 'HTTPRoute' | 'GRPCRoute'; name: string; sectionName?: string }[],
): AttachablePolicy {
  return {
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'SomePolicy',
    metadata: { namespace: 'ns', name, creationTimestamp: created, generation: 3 },
    spec: { targetRefs: refs.map((r) => ({ group: GROUP, ...r })) },
  };
}

const targets = new Map<string, PolicyTarget>([
  [targetKey('Gateway', 'ns', 'gw'), { sections: new Set(['http', 'https']), gateways: ['ns/gw'] }],
  [targetKey('Gateway', 'ns', 'theirs'), { sections: new Set(['http']), gateways: [] }],
  [targetKey('ListenerSet', 'ns', 'ls'), { sections: new Set(['extra']), gateways: ['ns/gw'] }],
  [targetKey('HTTPRoute', 'ns', 'r'), { sections: new Set(['api']), gateways: ['ns/gw', 'ns/gw2'] }],
]);

function accepted(status: { status: Record<string, unknown> } | undefined): string[] {
  const ancestors = (status?.status.ancestors ?? []) as {
    ancestorRef: Record<string, string>;
    conditions: { status: string; reason: string }[];
  }[];
  return ancestors.map(
    (a) =>
      `${a.ancestorRef.kind} ${a.ancestorRef.name}${a.ancestorRef.sectionName ? `#${a.ancestorRef.sectionName}` : ''}: ${a.conditions[0]!.reason}`,
  );
}

test('the oldest policy holds a target; the younger is Conflicted there and holds its other targets', () => {
  const older = policy('older', '2026-01-01T00:00:00Z', [{ kind: 'Gateway', name: 'gw' }]);
  const younger = policy('younger', '2026-01-02T00:00:00Z', [
    { kind: 'Gateway', name: 'gw' },
    { kind: 'Gateway', name: 'gw', sectionName: 'http' },
  ]);
  const a = attachPolicies([younger, older], targets, () => undefined, 'ctl');
  assert.equal(a.holders.get(targetKey('Gateway', 'ns', 'gw')), older);
  assert.equal(a.holders.get(targetKey('Gateway', 'ns', 'gw', 'http')), younger);
  assert.deepEqual(accepted(a.statuses.find((s) => s.name === 'younger')), [
    'Gateway gw#http: Accepted',
    'Gateway gw: Conflicted',
  ]);
  assert.equal(a.statuses[0]!.name, 'older', 'statuses in namespace/name order');
});

test('a missing target or section is TargetNotFound on the target itself; a Gateway not ours gets nothing', () => {
  const p = policy('p', '2026-01-01T00:00:00Z', [
    { kind: 'HTTPRoute', name: 'gone' },
    { kind: 'HTTPRoute', name: 'r', sectionName: 'nope' },
    { kind: 'Gateway', name: 'theirs' },
  ]);
  const a = attachPolicies([p], targets, () => undefined, 'ctl');
  assert.deepEqual(accepted(a.statuses[0]), [
    'HTTPRoute gone: TargetNotFound',
    'HTTPRoute r#nope: TargetNotFound',
  ]);
  assert.deepEqual(
    [...a.holders.keys()],
    [targetKey('Gateway', 'ns', 'theirs')],
    'held, but no fleet of ours uses it',
  );
  const onlyTheirs = attachPolicies(
    [policy('q', 'x', [{ kind: 'Gateway', name: 'theirs' }])],
    targets,
    () => undefined,
    'ctl',
  );
  assert.deepEqual(onlyTheirs.statuses, [], 'no ancestor of ours: no status to write');
});

test('an invalid policy still holds its targets (fail closed) and says Invalid on every ancestor of its route', () => {
  const p = policy('bad', '2026-01-01T00:00:00Z', [{ kind: 'HTTPRoute', name: 'r' }]);
  const a = attachPolicies([p], targets, () => 'spec.x: broken', 'ctl');
  assert.equal(a.holders.get(targetKey('HTTPRoute', 'ns', 'r')), p);
  assert.deepEqual(accepted(a.statuses[0]), ['Gateway gw: Invalid', 'Gateway gw2: Invalid']);
  const ancestor = (
    a.statuses[0]!.status.ancestors as {
      controllerName: string;
      conditions: { observedGeneration: number }[];
    }[]
  )[0]!;
  assert.equal(ancestor.controllerName, 'ctl');
  assert.equal(ancestor.conditions[0]!.observedGeneration, 3);
});

test('at most 16 ancestors', () => {
  const many = new Map(targets);
  const gateways = Array.from({ length: 20 }, (_, i) => `ns/g${String(i).padStart(2, '0')}`);
  many.set(targetKey('HTTPRoute', 'ns', 'wide'), { sections: new Set(), gateways });
  const a = attachPolicies(
    [policy('p', 'x', [{ kind: 'HTTPRoute', name: 'wide' }])],
    many,
    () => undefined,
    'ctl',
  );
  assert.equal((a.statuses[0]!.status.ancestors as unknown[]).length, 16);
});

test('precedence: rule > route > ListenerSet listener > ListenerSet > Gateway listener > Gateway, whole', () => {
  const holders = new Map<string, string>([
    [targetKey('Gateway', 'ns', 'gw'), 'gateway'],
    [targetKey('Gateway', 'ns', 'gw', 'http'), 'gateway-listener'],
    [targetKey('ListenerSet', 'ns', 'ls'), 'listener-set'],
    [targetKey('ListenerSet', 'ns', 'ls', 'extra'), 'listener-set-listener'],
    [targetKey('HTTPRoute', 'ns', 'r'), 'route'],
    [targetKey('HTTPRoute', 'ns', 'r', 'api'), 'rule'],
  ]);
  assert.equal(listenerHolder(holders, { gateway: 'ns/gw', listener: 'http' }), 'gateway-listener');
  assert.equal(listenerHolder(holders, { gateway: 'ns/gw', listener: 'https' }), 'gateway');
  assert.equal(
    listenerHolder(holders, { gateway: 'ns/gw', listener: 'extra', listenerSet: 'ns/ls' }),
    'listener-set-listener',
  );
  assert.equal(
    listenerHolder(holders, { gateway: 'ns/gw', listener: 'other', listenerSet: 'ns/ls' }),
    'listener-set',
  );
  // A ListenerSet's listener named like a Gateway listener does not take the Gateway listener's policy.
  assert.equal(
    listenerHolder(holders, { gateway: 'ns/gw', listener: 'http', listenerSet: 'ns/ls2' }),
    'gateway',
  );
  assert.equal(ruleHolder(holders, 'HTTPRoute', 'ns', 'r', 'api'), 'rule');
  assert.equal(ruleHolder(holders, 'HTTPRoute', 'ns', 'r', 'web'), 'route');
  assert.equal(ruleHolder(holders, 'HTTPRoute', 'ns', 'r', undefined), 'route');
  assert.equal(ruleHolder(holders, 'GRPCRoute', 'ns', 'r', 'api'), undefined, 'kinds do not share targets');
});

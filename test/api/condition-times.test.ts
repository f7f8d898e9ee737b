import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stampConditionTimes } from '../../src/api/condition-times.js';

interface Condition {
  type: string;
  status: string;
  reason?: string;
  lastTransitionTime?: string;
}
interface Status {
  conditions?: Condition[];
  listeners?: { name: string; conditions: Condition[] }[];
  parents?: { parentRef: { name: string }; controllerName: string; conditions: Condition[] }[];
}

const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T00:05:00Z');

test('new conditions get the current time', () => {
  const out = stampConditionTimes<Status>(
    undefined,
    { conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted' }] },
    t0,
  );
  assert.equal(out.conditions?.[0]?.lastTransitionTime, t0.toISOString());
});

test('an unchanged status keeps its time, a changed one moves', () => {
  const before = stampConditionTimes<Status>(
    undefined,
    {
      conditions: [
        { type: 'Accepted', status: 'True' },
        { type: 'Programmed', status: 'False' },
      ],
    },
    t0,
  );
  const after = stampConditionTimes<Status>(
    before,
    {
      conditions: [
        { type: 'Accepted', status: 'True' },
        { type: 'Programmed', status: 'True' },
      ],
    },
    t1,
  );
  assert.equal(after.conditions?.[0]?.lastTransitionTime, t0.toISOString());
  assert.equal(after.conditions?.[1]?.lastTransitionTime, t1.toISOString());
});

test('nested lists are matched by listener name and by parentRef, not by position', () => {
  const before = stampConditionTimes<Status>(
    undefined,
    {
      listeners: [
        { name: 'a', conditions: [{ type: 'Programmed', status: 'True' }] },
        { name: 'b', conditions: [{ type: 'Programmed', status: 'True' }] },
      ],
      parents: [
        {
          parentRef: { name: 'eg' },
          controllerName: 'x',
          conditions: [{ type: 'Accepted', status: 'True' }],
        },
      ],
    },
    t0,
  );
  const after = stampConditionTimes<Status>(
    before,
    {
      listeners: [
        { name: 'b', conditions: [{ type: 'Programmed', status: 'True' }] },
        { name: 'c', conditions: [{ type: 'Programmed', status: 'True' }] },
      ],
      parents: [
        {
          parentRef: { name: 'eg' },
          controllerName: 'x',
          conditions: [{ type: 'Accepted', status: 'True' }],
        },
      ],
    },
    t1,
  );
  assert.equal(after.listeners?.[0]?.conditions[0]?.lastTransitionTime, t0.toISOString());
  assert.equal(after.listeners?.[1]?.conditions[0]?.lastTransitionTime, t1.toISOString());
  assert.equal(after.parents?.[0]?.conditions[0]?.lastTransitionTime, t0.toISOString());
});

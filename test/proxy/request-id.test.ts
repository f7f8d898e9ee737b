// Request ids the proxy makes are random UUIDs: none follows from another.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nextRequestId } from '../../src/proxy/routing/request-id.js';

test('request ids are version 4 UUIDs, distinct, and the last one tells nothing of the next', () => {
  const ids = Array.from({ length: 1000 }, () => nextRequestId());
  for (const id of ids)
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(new Set(ids).size, ids.length);
  // A counter (or any prefix kept from one id to the next) shares its first 24 hex digits between neighbours.
  const sharedPrefix = ids.slice(1).filter((id, i) => id.slice(0, 24) === ids[i]!.slice(0, 24)).length;
  assert.equal(sharedPrefix, 0);
  const sameTail = ids.slice(1).filter((id, i) => id.slice(24, 30) === ids[i]!.slice(24, 30)).length;
  assert.ok(sameTail < 5, `${sameTail} neighbours share the first half of their last group`);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { discardingLogger } from '../../../src/platform/log-line.js';
import type { ApiClient, ApiReply, JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { startLeaderElection } from '../../../src/provider/kubernetes/leader-election.js';

/** One Lease in memory; `hold()` makes the next write wait until the returned release is called. */
function fakeLeaseApi() {
  let lease: JsonObject | undefined;
  let gate: Promise<void> | undefined;
  const requests: string[] = [];
  const client: ApiClient = {
    async request(method, _path, body): Promise<ApiReply> {
      requests.push(method);
      if (method === 'GET') {
        return lease === undefined
          ? { status: 404, body: {} }
          : { status: 200, body: structuredClone(lease) };
      }
      const pending = gate;
      gate = undefined;
      if (pending !== undefined) await pending;
      lease = structuredClone(body as JsonObject);
      return { status: method === 'POST' ? 201 : 200, body: structuredClone(lease) };
    },
    watch() {
      throw new Error('not used');
    },
  };
  return {
    client,
    requests,
    holder: () => (lease?.spec as { holderIdentity?: string } | undefined)?.holderIdentity,
    hold(): () => void {
      let release = (): void => {};
      gate = new Promise((resolve) => {
        release = resolve;
      });
      return release;
    },
  };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(check(), 'condition reached');
}

test('stop() releases the lease even when a renewal was in flight, and never leads again', async () => {
  const api = fakeLeaseApi();
  const changes: boolean[] = [];
  const election = startLeaderElection({
    client: api.client,
    namespace: 'sys',
    name: 'lease',
    identity: 'ctl-1',
    retryMs: 10,
    onChange: (leading) => changes.push(leading),
    log: discardingLogger,
  });
  await until(() => election.isLeader());
  assert.equal(api.holder(), 'ctl-1');

  // The next renewal's write hangs; stop() arrives while it is under way.
  const release = api.hold();
  const writes = api.requests.length;
  await until(() => api.requests.length > writes && api.requests.at(-1) === 'PUT');
  const stopped = election.stop();
  await new Promise((r) => setTimeout(r, 20));
  release();
  await stopped;

  assert.equal(api.holder(), '', 'the lease is released, not re-taken by the renewal');
  assert.equal(election.isLeader(), false);
  assert.deepEqual(changes, [true, false]);
  const after = api.requests.length;
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(api.requests.length, after, 'no attempts after stop');
});

test('a replica that never led does not touch the lease on stop', async () => {
  const api = fakeLeaseApi();
  const first = startLeaderElection({
    client: api.client,
    namespace: 'sys',
    name: 'lease',
    identity: 'ctl-1',
    retryMs: 10,
    onChange: () => {},
    log: discardingLogger,
  });
  await until(() => first.isLeader());
  const second = startLeaderElection({
    client: api.client,
    namespace: 'sys',
    name: 'lease',
    identity: 'ctl-2',
    retryMs: 10,
    onChange: () => {},
    log: discardingLogger,
  });
  await new Promise((r) => setTimeout(r, 30));
  await second.stop();
  assert.equal(api.holder(), 'ctl-1');
  await first.stop();
  assert.equal(api.holder(), '');
});

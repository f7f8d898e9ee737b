import assert from 'node:assert/strict';
import { test } from 'node:test';
import { discardingLogger } from '../../../src/platform/log-line.js';
import { startLeaderElection } from '../../../src/provider/kubernetes/leader-election.js';
import { createFakeKubernetesApi } from '../../support/fake-kubernetes-api.js';

const LEASE = '/apis/coordination.k8s.io/v1/namespaces/sys/leases/lease';

/** The API server holding the Lease; `hold()` makes the next write wait until the returned release is called. */
function fakeLeaseApi() {
  let gate: Promise<void> | undefined;
  const api = createFakeKubernetesApi(async (request) => {
    if (request.method === 'GET') return undefined;
    const pending = gate;
    gate = undefined;
    if (pending !== undefined) await pending;
    return undefined;
  });
  return {
    client: api.client,
    /** Each request's method, in order. */
    methods: () => api.requests.map((r) => r.method),
    holder: () => (api.objects.get(LEASE)?.spec as { holderIdentity?: string } | undefined)?.holderIdentity,
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
  const writes = api.methods().length;
  await until(() => api.methods().length > writes && api.methods().at(-1) === 'PUT');
  const stopped = election.stop();
  await new Promise((r) => setTimeout(r, 20));
  release();
  await stopped;

  assert.equal(api.holder(), '', 'the lease is released, not re-taken by the renewal');
  assert.equal(election.isLeader(), false);
  assert.deepEqual(changes, [true, false]);
  const after = api.methods().length;
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(api.methods().length, after, 'no attempts after stop');
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

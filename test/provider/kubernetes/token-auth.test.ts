// Gateway Namespace Mode discovery auth against TokenReview answers that must not admit a proxy: a token bound
// to no pod (no `authentication.kubernetes.io/pod-name` extra: a `kubectl create token` token, say), bound to
// several, or to a name not the requesting node's, and answers whose fields have the wrong shape. A stream is
// admitted only when authentication and authorization both say so.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { POD_NAME_EXTRA, tokenAuth } from '../../../src/provider/kubernetes/token-auth.js';
import { createFakeKubernetesApi } from '../../support/fake-kubernetes-api.js';

const AUDIENCE = 'portico-gateway.sys.svc.cluster.local';
const ACCOUNT = 'system:serviceaccount:team:proxy-team-gw-1234abcd';
const GROUPS = ['system:serviceaccounts', 'system:serviceaccounts:team', 'system:authenticated'];

/** A TokenReview status as the API server writes it for the fleet's own pod `pod-1`, with `user` changed. */
function review(user: JsonObject): JsonObject {
  return {
    authenticated: true,
    audiences: [AUDIENCE],
    user: { username: ACCOUNT, groups: GROUPS, extra: { [POD_NAME_EXTRA]: ['pod-1'] }, ...user },
  };
}

/** Whether a stream of `node` for fleet team/gw is admitted when the TokenReview answers `status`. */
async function admitted(status: JsonObject, node = 'pod-1'): Promise<boolean> {
  // The TokenReview the API server creates, with `status` as its verdict.
  const { client } = createFakeKubernetesApi(() => ({ status: 201, body: { status } }));
  const auth = tokenAuth({
    client,
    controllerNamespace: 'sys',
    fleetAccount: (fleet) =>
      fleet === 'team/gw' ? { namespace: 'team', name: 'proxy-team-gw-1234abcd' } : undefined,
  });
  if (auth.mode !== 'token') throw new Error('token mode expected');
  let identity: Awaited<ReturnType<typeof auth.authenticate>>;
  try {
    identity = await auth.authenticate('header.payload.signature');
  } catch {
    return false;
  }
  return auth.authorize(identity, { fleet: 'team/gw', node });
}

test('the fleet’s own pod is admitted (the control: the answers below differ in one field each)', async () => {
  assert.equal(await admitted(review({})), true);
});

test('a token bound to no pod is refused', async () => {
  assert.equal(await admitted(review({ extra: undefined })), false, 'no extra at all');
  assert.equal(await admitted(review({ extra: {} })), false, 'no pod-name extra');
  assert.equal(
    await admitted(review({ extra: { 'authentication.kubernetes.io/node-name': ['node-1'] } })),
    false,
    'a node name but no pod name',
  );
  assert.equal(await admitted(review({ extra: { [POD_NAME_EXTRA]: [] } })), false, 'an empty pod-name list');
  assert.equal(await admitted(review({ extra: { [POD_NAME_EXTRA]: [''] } }), ''), false, 'an empty pod name');
});

test('a token bound to several pods, or to another pod than the node, is refused', async () => {
  assert.equal(await admitted(review({ extra: { [POD_NAME_EXTRA]: ['pod-1', 'pod-2'] } })), false);
  assert.equal(await admitted(review({ extra: { [POD_NAME_EXTRA]: ['pod-1', 'pod-1'] } })), false);
  assert.equal(await admitted(review({}), 'pod-2'), false);
});

test('an answer whose fields have the wrong shape is refused, never read loosely', async () => {
  // A string is not a list: its one character 'p' must not pass as a pod named 'p'.
  assert.equal(await admitted(review({ extra: { [POD_NAME_EXTRA]: 'p' } }), 'p'), false, 'pod-name a string');
  assert.equal(await admitted(review({ extra: { [POD_NAME_EXTRA]: [1] } }), '1'), false, 'pod-name a number');
  // A string that contains the group's name is not a list holding it.
  assert.equal(await admitted(review({ groups: 'system:serviceaccounts' })), false, 'groups a string');
  assert.equal(await admitted(review({ username: ['x'] })), false, 'username a list');
  assert.equal(await admitted({ ...review({}), authenticated: 'true' }), false, 'authenticated a string');
  assert.equal(await admitted({ ...review({}), audiences: AUDIENCE }), false, 'audiences a string');
});

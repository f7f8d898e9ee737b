import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asList, call } from './client.js';
import { type Cluster, startCluster } from './harness.js';

let cluster: Cluster;
before(async () => {
  cluster = await startCluster({ workloads: false });
  await call(cluster, 'POST', '/api/v1/namespaces', { metadata: { name: 'team' } });
  await call(cluster, 'POST', '/api/v1/namespaces/team/serviceaccounts', { metadata: { name: 'robot' } });
  await call(cluster, 'POST', '/api/v1/namespaces/team/serviceaccounts', { metadata: { name: 'reviewer' } });
});
after(() => cluster.stop());

const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const REVIEWS = '/apis/authentication.k8s.io/v1/tokenreviews';

async function tokenFor(sa: string, spec: Record<string, unknown> = {}): Promise<string> {
  const reply = await call(cluster, 'POST', `/api/v1/namespaces/team/serviceaccounts/${sa}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec,
  });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  return String(reply.body.status?.token);
}

test('RBAC: roles grant by verb, group, resource, subresource and resourceName; denials are 403 Status', async () => {
  const token = await tokenFor('robot');
  const denied = await call(cluster, 'GET', '/api/v1/namespaces/team/configmaps', undefined, { token });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.reason, 'Forbidden');
  assert.equal(
    denied.body.message,
    'configmaps is forbidden: User "system:serviceaccount:team:robot" cannot list resource "configmaps" in API group "" in the namespace "team"',
  );
  await call(cluster, 'POST', `${RBAC}/namespaces/team/roles`, {
    metadata: { name: 'cm-reader' },
    rules: [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['apps'], resources: ['deployments/status'], verbs: ['update', 'patch'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: ['allowed'] },
    ],
  });
  await call(cluster, 'POST', `${RBAC}/namespaces/team/rolebindings`, {
    metadata: { name: 'robot-reads' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm-reader' },
    subjects: [{ kind: 'ServiceAccount', name: 'robot', namespace: 'team' }],
  });
  assert.equal(
    (await call(cluster, 'GET', '/api/v1/namespaces/team/configmaps', undefined, { token })).status,
    200,
  );
  assert.equal(
    (await call(cluster, 'GET', '/api/v1/namespaces/default/configmaps', undefined, { token })).status,
    403,
  );
  assert.equal(
    (
      await call(
        cluster,
        'POST',
        '/api/v1/namespaces/team/configmaps',
        { metadata: { name: 'x' } },
        { token },
      )
    ).status,
    403,
  );
  assert.equal(
    (await call(cluster, 'GET', '/api/v1/namespaces/team/secrets/allowed', undefined, { token })).status,
    404,
  );
  assert.equal(
    (await call(cluster, 'GET', '/api/v1/namespaces/team/secrets/other', undefined, { token })).status,
    403,
  );
  await call(cluster, 'POST', '/apis/apps/v1/namespaces/team/deployments', {
    metadata: { name: 'd' },
    spec: {
      selector: { matchLabels: { a: 'b' } },
      template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x' }] } },
    },
  });
  const merge = { contentType: 'application/merge-patch+json', token };
  const status = await call(
    cluster,
    'PATCH',
    '/apis/apps/v1/namespaces/team/deployments/d/status',
    { status: { replicas: 1 } },
    merge,
  );
  assert.equal(status.status, 200);
  const main = await call(
    cluster,
    'PATCH',
    '/apis/apps/v1/namespaces/team/deployments/d',
    { spec: { replicas: 2 } },
    merge,
  );
  assert.equal(main.status, 403);
  assert.match(String(main.body.message), /cannot patch resource "deployments" in API group "apps"/);
});

test('RBAC: a ClusterRoleBinding to a group grants cluster-wide', async () => {
  const token = await tokenFor('reviewer');
  assert.equal((await call(cluster, 'GET', '/api/v1/namespaces', undefined, { token })).status, 403);
  await call(cluster, 'POST', `${RBAC}/clusterroles`, {
    metadata: { name: 'ns-reader' },
    rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['list'] }],
  });
  await call(cluster, 'POST', `${RBAC}/clusterrolebindings`, {
    metadata: { name: 'all-sa-read-ns' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ns-reader' },
    subjects: [{ kind: 'Group', name: 'system:serviceaccounts:team', apiGroup: 'rbac.authorization.k8s.io' }],
  });
  const listed = await call(cluster, 'GET', '/api/v1/namespaces', undefined, { token });
  assert.equal(listed.status, 200);
  assert.ok(asList(listed.body.items).some((n) => n.metadata?.name === 'team'));
});

test('TokenReview: a pod-bound token with the right audience is authenticated with pod extras', async () => {
  await call(cluster, 'POST', '/api/v1/namespaces/team/pods', {
    metadata: { name: 'p1' },
    spec: { serviceAccountName: 'robot', containers: [{ name: 'c', image: 'x' }] },
  });
  const pod = (await call(cluster, 'GET', '/api/v1/namespaces/team/pods/p1')).body;
  const token = await tokenFor('robot', {
    audiences: ['portico-gateway.system.svc.cluster.local'],
    expirationSeconds: 3600,
    boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p1', uid: pod.metadata?.uid },
  });
  const review = await call(cluster, 'POST', REVIEWS, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenReview',
    spec: { token, audiences: ['portico-gateway.system.svc.cluster.local'] },
  });
  assert.equal(review.status, 201);
  const status = review.body.status;
  assert.equal(status?.authenticated, true);
  assert.equal(status?.user?.username, 'system:serviceaccount:team:robot');
  assert.deepEqual(status?.user?.groups, [
    'system:serviceaccounts',
    'system:serviceaccounts:team',
    'system:authenticated',
  ]);
  assert.deepEqual(status?.user?.extra?.['authentication.kubernetes.io/pod-name'], ['p1']);
  assert.deepEqual(status?.user?.extra?.['authentication.kubernetes.io/pod-uid'], [pod.metadata?.uid]);
  assert.deepEqual(status?.audiences, ['portico-gateway.system.svc.cluster.local']);

  const wrongAudience = await call(cluster, 'POST', REVIEWS, {
    spec: { token, audiences: ['someone-else'] },
  });
  assert.equal(wrongAudience.body.status?.authenticated, undefined);
  assert.match(String(wrongAudience.body.status?.error), /audiences/);
  const forApi = await call(cluster, 'GET', '/api/v1/namespaces/team/configmaps', undefined, { token });
  assert.equal(forApi.status, 401, 'a token for another audience does not authenticate to the API server');

  await call(cluster, 'DELETE', '/api/v1/namespaces/team/pods/p1');
  const podGone = await call(cluster, 'POST', REVIEWS, {
    spec: { token, audiences: ['portico-gateway.system.svc.cluster.local'] },
  });
  assert.match(String(podGone.body.status?.error), /pod/);
});

test('TokenReview rejects expired and forged tokens; TokenRequest enforces the minimum lifetime', async () => {
  const expired = cluster.issueToken({
    namespace: 'team',
    serviceAccount: 'robot',
    audiences: ['aud'],
    expirationSeconds: 600,
    nowSeconds: Math.floor(Date.now() / 1000) - 700,
  });
  const review = await call(cluster, 'POST', REVIEWS, { spec: { token: expired, audiences: ['aud'] } });
  assert.equal(review.status, 201);
  assert.match(String(review.body.status?.error), /expired/);
  const valid = cluster.issueToken({ namespace: 'team', serviceAccount: 'robot', audiences: ['aud'] });
  const [head, body] = valid.split('.');
  const forged = `${head}.${body}.${Buffer.from('x'.repeat(64)).toString('base64url')}`;
  const forgedReview = await call(cluster, 'POST', REVIEWS, { spec: { token: forged, audiences: ['aud'] } });
  assert.match(String(forgedReview.body.status?.error), /signature/);
  const short = await call(cluster, 'POST', '/api/v1/namespaces/team/serviceaccounts/robot/token', {
    spec: { expirationSeconds: 60 },
  });
  assert.equal(short.status, 422);
  const robotToken = await tokenFor('robot');
  const denied = await call(cluster, 'POST', REVIEWS, { spec: { token: valid } }, { token: robotToken });
  assert.equal(denied.status, 403, 'creating a TokenReview needs RBAC permission');
});

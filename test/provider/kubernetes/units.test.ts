import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leaseName } from '../../../src/provider/kubernetes/leader-election.js';
import { canonical } from '../../../src/provider/kubernetes/status-writer.js';
import { tokenAuth, tokenExpiry } from '../../../src/provider/kubernetes/token-auth.js';
import { fingerprint, WATCHED_KINDS } from '../../../src/provider/kubernetes/watched-kinds.js';
import { createFakeKubernetesApi } from '../../support/fake-kubernetes-api.js';

test('lease names are valid object names derived from the controller name', () => {
  assert.equal(
    leaseName('gateway.portico.io/gatewayclass-controller'),
    'gateway.portico.io-gatewayclass-controller',
  );
  assert.equal(leaseName('Example.COM/Team_A//ctl/'), 'example.com-team-a-ctl');
});

test('status comparison ignores key order', () => {
  assert.equal(canonical({ a: 1, b: { d: 2, c: 3 } }), canonical({ b: { c: 3, d: 2 }, a: 1 }));
  assert.notEqual(canonical({ a: [1, 2] }), canonical({ a: [2, 1] }));
});

test('fingerprints ignore resourceVersion, managedFields and, for outputs, status', () => {
  const gateway = WATCHED_KINDS.find((k) => k.kind === 'Gateway')!;
  const service = WATCHED_KINDS.find((k) => k.kind === 'Service')!;
  const a = {
    metadata: { name: 'g', resourceVersion: '1', managedFields: [] },
    spec: { x: 1 },
    status: { s: 1 },
  };
  const b = { metadata: { name: 'g', resourceVersion: '2' }, spec: { x: 1 }, status: { s: 2 } };
  assert.equal(fingerprint(gateway, a), fingerprint(gateway, b));
  assert.notEqual(fingerprint(service, a), fingerprint(service, b));
  assert.notEqual(fingerprint(gateway, a), fingerprint(gateway, { ...b, spec: { x: 2 } }));
});

function jwt(claims: object): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'ES256' })}.${part(claims)}.sig`;
}

test('token auth: TokenReview decides authentication; a token is authorized for its own fleet and pod only', async () => {
  // Every TokenReview the API server creates says the same: the team/gw fleet's ServiceAccount, pod-1.
  const api = createFakeKubernetesApi(() => ({
    status: 201,
    body: {
      status: {
        authenticated: true,
        audiences: ['portico-gateway.sys.svc.cluster.local'],
        user: {
          username: 'system:serviceaccount:team:proxy-team-gw-1234abcd',
          groups: ['system:serviceaccounts', 'system:authenticated'],
          extra: { 'authentication.kubernetes.io/pod-name': ['pod-1'] },
        },
      },
    },
  }));
  const client = api.client;
  const auth = tokenAuth({
    client,
    controllerNamespace: 'sys',
    fleetAccount: (fleet) =>
      fleet === 'team/gw'
        ? { namespace: 'team', name: 'proxy-team-gw-1234abcd' }
        : fleet === 'other/gw'
          ? { namespace: 'other', name: 'proxy-other-gw-5678abcd' }
          : undefined,
  });
  assert.equal(auth.mode, 'token');
  if (auth.mode !== 'token') return;
  const identity = await auth.authenticate(jwt({ exp: 2_000_000_000 }));
  assert.equal(identity.expiresAt, 2_000_000_000_000);
  assert.deepEqual((api.requests[0]?.body as { spec: unknown } | undefined)?.spec, {
    token: jwt({ exp: 2_000_000_000 }),
    audiences: ['portico-gateway.sys.svc.cluster.local'],
  });
  assert.equal(await auth.authorize(identity, { fleet: 'team/gw', node: 'pod-1' }), true);
  assert.equal(await auth.authorize(identity, { fleet: 'team/gw', node: 'pod-2' }), false);
  assert.equal(await auth.authorize(identity, { fleet: 'other/gw', node: 'pod-1' }), false);
  assert.equal(await auth.authorize(identity, { fleet: 'unknown', node: 'pod-1' }), false);
  assert.equal(tokenExpiry('not-a-jwt'), undefined);
});

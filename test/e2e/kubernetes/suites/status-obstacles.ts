// Statuses never hold configuration back: while the API server refuses a route's status writes (an admission
// policy), an edit of that route is still served through the proxy, with its status not yet written, and another
// route's status is written meanwhile; once the policy goes, the status catches up. The policy is shown in force
// (a probe write refused the same way) before the edit and after it is served, so "not written yet" is the
// policy's doing, not a race. (Slow status writes, under the controller's own rate limit, are helm.test.ts's: an
// API Priority and Fairness level cannot stand in, as it runs a lone request even with no seats of its own.) A
// status someone else overwrites is written back by itself: the watch event of that status change alone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually, type Loose } from '../../../cluster/kube-api.js';
import { E2E_SKIP } from '../install.js';
import {
  echoNamespace,
  gateway,
  gatewayClass,
  programmedAddress,
  route,
  routeAccepted,
  served,
} from '../traffic.js';

const NS = 'status-obstacles';
const ROUTES = `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes`;
const POLICY = 'portico-e2e-refuse-route-status';
// The node is shared by two test sequences: waits are generous, none is a timing assertion.
const WAIT_MS = 90_000;
let cluster: Cluster;
let address: string;

export async function setup(c: Cluster, _system: string): Promise<void> {
  cluster = c;
  await gatewayClass(cluster, 'portico', DEFAULT_CONTROLLER_NAME);
  await echoNamespace(cluster, NS);
  await gateway(cluster, NS, 'gw', 'portico', [{ name: 'http', port: 80 }]);
  address = await programmedAddress(cluster, NS, 'gw');
}

async function ok(method: string, path: string, body: unknown, what: string): Promise<Loose> {
  const contentType = method === 'PATCH' ? 'application/merge-patch+json' : undefined;
  const r = await call(cluster, method, path, body, contentType === undefined ? {} : { contentType });
  assert.ok(r.status >= 200 && r.status < 300, `${what}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const accepted = (name: string): Promise<boolean> => routeAccepted(cluster, NS, name);

/** A route attached to the suite's Gateway, served, then its hostname edited: resolves once the edit is served. */
async function editServed(name: string): Promise<void> {
  await route(cluster, NS, name, { namespace: NS, name: 'gw' }, `${name}.example.com`, 'echo');
  await served(address, 80, `${name}.example.com`);
  await ok('PATCH', `${ROUTES}/${name}`, { spec: { hostnames: [`${name}-edited.example.com`] } }, 'the edit');
  await served(address, 80, `${name}-edited.example.com`);
}

/** A status write to route `probe` (no parent of ours: the controller never writes it): its HTTP status. */
async function probeWrite(probe: string): Promise<number> {
  const body = { status: { parents: [] } };
  const r = await call(cluster, 'PATCH', `${ROUTES}/${probe}/status`, body, {
    contentType: 'application/merge-patch+json',
  });
  return r.status;
}

async function probeRoute(name: string): Promise<void> {
  await ok(
    'POST',
    ROUTES,
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name },
      spec: { parentRefs: [{ name: 'nobody' }], rules: [{}] },
    },
    `probe route ${name}`,
  );
}

test('a route whose status writes an admission policy refuses is still served after an edit; its status follows once allowed', {
  skip: E2E_SKIP,
}, async () => {
  const admission = '/apis/admissionregistration.k8s.io/v1';
  await ok(
    'POST',
    `${admission}/validatingadmissionpolicies`,
    {
      metadata: { name: POLICY },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: ['gateway.networking.k8s.io'],
              apiVersions: ['*'],
              operations: ['UPDATE'],
              resources: ['httproutes/status'],
            },
          ],
        },
        validations: [
          {
            expression: "!object.metadata.name.startsWith('refused')",
            message: 'e2e: refused',
            reason: 'Forbidden',
          },
        ],
      },
    },
    'the policy',
  );
  await ok(
    'POST',
    `${admission}/validatingadmissionpolicybindings`,
    {
      metadata: { name: POLICY },
      spec: {
        policyName: POLICY,
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } } },
      },
    },
    'its binding',
  );
  await probeRoute('refused-probe');
  // A policy takes a moment to be in force: until a probe's status write is refused.
  await eventually(
    async () => ((await probeWrite('refused-probe')) === 403 ? true : undefined),
    'the policy in force',
    WAIT_MS,
  );
  try {
    await editServed('refused-route');
    assert.equal(await accepted('refused-route'), false, 'its status cannot have been written');
    assert.equal(await probeWrite('refused-probe'), 403, 'the policy still in force');
    // Another route of the same Gateway gets its status meanwhile: one refused object holds no other back.
    await route(
      cluster,
      NS,
      'allowed-route',
      { namespace: NS, name: 'gw' },
      'allowed-route.example.com',
      'echo',
    );
    await eventually(
      async () => ((await accepted('allowed-route')) ? true : undefined),
      'the other status',
      WAIT_MS,
    );
  } finally {
    await call(cluster, 'DELETE', `${admission}/validatingadmissionpolicybindings/${POLICY}`);
    await call(cluster, 'DELETE', `${admission}/validatingadmissionpolicies/${POLICY}`);
  }
  await eventually(
    async () => ((await accepted('refused-route')) ? true : undefined),
    'the status once allowed',
    WAIT_MS,
  );
});

test('a status another writer overwrites is written back, though nothing else about the route changed', {
  skip: E2E_SKIP,
}, async () => {
  await route(cluster, NS, 'overwritten', { namespace: NS, name: 'gw' }, 'overwritten.example.com', 'echo');
  await eventually(async () => ((await accepted('overwritten')) ? true : undefined), 'its status', WAIT_MS);
  // Someone else (a person, another tool) empties the route's parents: Portico's entry is gone.
  // What the write returned, not a later read: the controller may write the status back before that read.
  const overwritten = await ok(
    'PATCH',
    `${ROUTES}/overwritten/status`,
    { status: { parents: [] } },
    'the overwrite',
  );
  assert.deepEqual(asList(overwritten.status?.parents), [], 'the overwrite took');
  await eventually(
    async () => ((await accepted('overwritten')) ? true : undefined),
    'the status written back',
    WAIT_MS,
  );
});

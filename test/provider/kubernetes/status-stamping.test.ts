// The Kubernetes status sink's condition times: stamped by the runner against the object the informer shows,
// and stamped again against the latest object when a write conflict made the writer read it afresh.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApiClient, JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { createStatusWriter } from '../../../src/provider/kubernetes/status-writer.js';
import { createStatusStamper, restamp } from '../../../src/runner/status-stamps.js';
import type { ObjectStatus } from '../../../src/translate/index.js';
import { createFakeKubernetesApi } from '../../support/fake-kubernetes-api.js';

const OURS = 'gateway.portico.io/gatewayclass-controller';
const LONG_AGO = '2020-01-01T00:00:00.000Z';
const accepted = { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Accepted' };

const translated: ObjectStatus = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'GatewayClass',
  name: 'eg',
  generation: 1,
  status: { conditions: [{ ...accepted, observedGeneration: 1 }] },
};

function gatewayClass(resourceVersion: string, conditions: JsonObject[]): JsonObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name: 'eg', generation: 1, resourceVersion },
    status: { conditions },
  };
}

/** An API server holding `latest`: a write against an older resourceVersion conflicts, as on the API server. */
function fakeClient(latest: JsonObject) {
  const api = createFakeKubernetesApi();
  api.add(latest);
  return { client: api.client, requests: api.requests };
}

function write(shown: JsonObject, client: ApiClient): Promise<string | undefined> {
  const [stamped] = createStatusStamper().stamp([translated], () => shown, new Date());
  const writer = createStatusWriter({ client, controllerName: OURS, onWrite: () => {} });
  return writer.write(stamped!.stamped, shown, (status) => restamp(stamped!, status, new Date()));
}

test('a condition that holds keeps the time the object shows: nothing to write', async () => {
  const shown = gatewayClass('1', [{ ...accepted, observedGeneration: 1, lastTransitionTime: LONG_AGO }]);
  const { client, requests } = fakeClient(shown);
  await write(shown, client);
  assert.deepEqual(requests, []);
});

test('after a conflict the status is stamped against the latest object, so an equal one is not written', async () => {
  // The informer still shows an older object without the condition; the server already holds it.
  const stale = gatewayClass('1', []);
  const latest = gatewayClass('2', [{ ...accepted, observedGeneration: 1, lastTransitionTime: LONG_AGO }]);
  const { client, requests } = fakeClient(latest);
  await write(stale, client);
  assert.deepEqual(
    requests.map((r) => r.method),
    ['PATCH', 'GET'],
  );
});

test('a condition whose status changed gets a new time when written after a conflict', async () => {
  const stale = gatewayClass('1', []);
  const latest = gatewayClass('2', [
    { ...accepted, status: 'False', observedGeneration: 1, lastTransitionTime: LONG_AGO },
  ]);
  const { client, requests } = fakeClient(latest);
  await write(stale, client);
  const put = requests.at(-1)!.body as { status: { conditions: { lastTransitionTime: string }[] } };
  assert.equal(requests.length, 3);
  assert.notEqual(put.status.conditions[0]?.lastTransitionTime, LONG_AGO);
});

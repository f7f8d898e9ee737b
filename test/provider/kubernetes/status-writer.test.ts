import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApiClient, JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { createStatusWriter } from '../../../src/provider/kubernetes/status-writer.js';

const OURS = 'gateway.portico.io/gatewayclass-controller';

/** An API server that holds one object and records every request. */
function fakeClient(object: JsonObject): {
  client: ApiClient;
  requests: { method: string; path: string; body?: unknown }[];
} {
  const requests: { method: string; path: string; body?: unknown }[] = [];
  const client: ApiClient = {
    async request(method, path, body) {
      requests.push({ method, path, body });
      return { status: 200, body: method === 'GET' ? object : (body as JsonObject) };
    },
    watch() {
      throw new Error('not watched here');
    },
  };
  return { client, requests };
}

const accepted = {
  type: 'Accepted',
  status: 'True',
  reason: 'Accepted',
  message: 'Accepted',
  observedGeneration: 1,
};

for (const [kind, resource] of [
  ['HTTPRoute', 'httproutes'],
  ['GRPCRoute', 'grpcroutes'],
] as const) {
  test(`${kind} status goes to ${resource}/status with other controllers' parents kept`, async () => {
    const other = { parentRef: { name: 'theirs' }, controllerName: 'example.com/other', conditions: [] };
    const { client, requests } = fakeClient({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind,
      metadata: { name: 'r', namespace: 'apps', generation: 1, resourceVersion: '7' },
      status: { parents: [other] },
    });
    const writer = createStatusWriter({ client, controllerName: OURS, log: () => {}, onWrite: () => {} });
    const ours = { parentRef: { name: 'eg' }, controllerName: OURS, conditions: [accepted] };
    await writer.write(
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind,
        namespace: 'apps',
        name: 'r',
        generation: 1,
        status: { parents: [ours] },
      },
      undefined,
    );
    const put = requests.find((r) => r.method === 'PUT');
    assert.equal(put?.path, `/apis/gateway.networking.k8s.io/v1/namespaces/apps/${resource}/r/status`);
    const body = put?.body as { status: { parents: { controllerName: string }[] } } | undefined;
    assert.deepEqual(
      body?.status.parents.map((p) => p.controllerName),
      ['example.com/other', OURS],
    );
  });
}

// Faults of real components under traffic: a proxy container killed by its runtime, the API server restarted,
// etcd frozen. The data plane keeps (or resumes) serving, and the controller programs the next change after.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually } from '../../../cluster/kube-api.js';
import { assertNoFailedRequests, duringTraffic, proxyPod } from '../handover.js';
import { E2E_SKIP } from '../install.js';
import { echoNamespace, gateway, gatewayClass, get, programmedAddress, route, served } from '../traffic.js';

const NS = 'faults';
let cluster: Cluster;
let system: string;
let address: string;

export async function setup(c: Cluster, sys: string): Promise<void> {
  cluster = c;
  system = sys;
  await gatewayClass(cluster, 'portico', DEFAULT_CONTROLLER_NAME);
  await echoNamespace(cluster, NS);
  await gateway(cluster, NS, 'gw', 'portico', [{ name: 'http', port: 80 }]);
  await route(cluster, NS, 'web', { namespace: NS, name: 'gw' }, 'faults.example.com', 'echo');
  address = await programmedAddress(cluster, NS, 'gw');
  await served(address, 80, 'faults.example.com');
}

/** A route added now answers 200: the controller sees changes and the proxies apply them. */
async function newRouteServed(name: string): Promise<void> {
  await route(cluster, NS, name, { namespace: NS, name: 'gw' }, `${name}.example.com`, 'echo');
  await served(address, 80, `${name}.example.com`);
}

/** `disrupt` happens while traffic flows to the Gateway: no request fails, and the next change is programmed. */
async function withoutFailedRequests(t: TestContext, disrupt: () => Promise<void>, nextRoute: string) {
  const result = await duringTraffic([{ address, port: 80, host: 'faults.example.com' }], disrupt);
  assertNoFailedRequests(t, result);
  await newRouteServed(nextRoute);
}

test('a proxy container killed by the runtime is restarted, gets its config back and serves again', {
  skip: E2E_SKIP,
}, async (t) => {
  // Controller Namespace Mode: the fleet's pods run in the controller's namespace.
  const pod = await proxyPod(cluster, system, 'gw');
  const proxy = asList(pod.status?.containerStatuses).find((c) => c.name === 'proxy');
  const id = String(proxy?.containerID).replace('containerd://', '');
  const restarts = Number(proxy?.restartCount);
  const killed = Date.now();
  cluster.ctr(['tasks', 'kill', '--signal', 'SIGKILL', id]);
  await eventually(
    async () => {
      const r = await call(cluster, 'GET', `/api/v1/namespaces/${system}/pods/${pod.metadata?.name}`);
      const c = asList(r.body.status?.containerStatuses).find((s) => s.name === 'proxy');
      return Number(c?.restartCount) > restarts && String(c?.ready) === 'true' ? true : undefined;
    },
    'the proxy container restarted and ready',
    60_000,
    200,
  );
  await served(address, 80, 'faults.example.com');
  t.diagnostic(`serving again ${Date.now() - killed} ms after the kill`);
  await newRouteServed('after-kill');
});

test('an API server restart under traffic fails no request; the next change is programmed after it', {
  skip: E2E_SKIP,
}, async (t) => {
  await withoutFailedRequests(
    t,
    async () => {
      const began = Date.now();
      await cluster.restart('kube-apiserver');
      t.diagnostic(`API server serving again after ${Date.now() - began} ms`);
    },
    'after-apiserver',
  );
});

test('etcd frozen for 10 s under traffic: proxies keep serving; changes apply once it thaws', {
  skip: E2E_SKIP,
}, async (t) => {
  await withoutFailedRequests(
    t,
    async () => {
      const resume = cluster.pause('etcd');
      try {
        await new Promise((r) => setTimeout(r, 10_000));
        // Meanwhile the API server cannot answer writes; the data plane does not depend on it.
        assert.equal((await get(address, 80, 'faults.example.com')).status, 200);
      } finally {
        resume();
      }
    },
    'after-etcd',
  );
});

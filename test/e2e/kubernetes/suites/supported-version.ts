// The Gateway API CRDs as the controller finds them: with the v1.7.0 CRDs every class it serves says
// SupportedVersion=True; with one CRD gone (GRPCRoute here), SupportedVersion=False/UnsupportedVersion names it,
// and the kinds still installed keep working (an HTTPRoute edit is served meanwhile); with the CRD back, True
// again. Runs last in its file: deleting a CRD deletes every object of its kind.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import type { Cluster } from '../../../cluster/harness.js';
import { call, eventually, type Loose } from '../../../cluster/kube-api.js';
import { E2E_SKIP } from '../install.js';
import { echoNamespace, gateway, gatewayClass, programmedAddress, route, served } from '../traffic.js';

const NS = 'supported-version';
const CRD = 'grpcroutes.gateway.networking.k8s.io';
// The controller reads the CRDs every 30 s; the node is shared with another test sequence.
const WAIT_MS = 120_000;
let cluster: Cluster;
let address: string;

export async function setup(c: Cluster, _system: string): Promise<void> {
  cluster = c;
  await gatewayClass(cluster, 'portico', DEFAULT_CONTROLLER_NAME);
  await echoNamespace(cluster, NS);
  await gateway(cluster, NS, 'gw', 'portico', [{ name: 'http', port: 80 }]);
  address = await programmedAddress(cluster, NS, 'gw');
}

/** The class's SupportedVersion condition once its status matches `status`. */
function supportedVersion(status: 'True' | 'False'): Promise<Loose> {
  return eventually(
    async () => {
      const r = await call(cluster, 'GET', '/apis/gateway.networking.k8s.io/v1/gatewayclasses/portico');
      const conditions = (r.body.status?.conditions ?? []) as Loose[];
      const found = conditions.find((c) => c.type === 'SupportedVersion');
      return found?.status === status ? found : undefined;
    },
    `GatewayClass portico SupportedVersion=${status}`,
    WAIT_MS,
    500,
  );
}

test('a missing Gateway API CRD makes every class say UnsupportedVersion, naming it; HTTPRoutes keep being served', {
  skip: E2E_SKIP,
}, async () => {
  const fine = await supportedVersion('True');
  assert.equal(fine.reason, 'SupportedVersion');
  assert.match(String(fine.message), /v1\.7\.0/);
  await route(cluster, NS, 'before', { namespace: NS, name: 'gw' }, 'before.example.com', 'echo');
  await served(address, 80, 'before.example.com');

  cluster.kubectl(['delete', 'crd', CRD, '--wait=true']);
  try {
    const missing = await supportedVersion('False');
    assert.equal(missing.reason, 'UnsupportedVersion');
    assert.match(String(missing.message), /not installed: grpcroutes/);
    // The kinds that are installed keep working: what was served is, and a new route is served too.
    await served(address, 80, 'before.example.com');
    await route(cluster, NS, 'during', { namespace: NS, name: 'gw' }, 'during.example.com', 'echo');
    await served(address, 80, 'during.example.com');
  } finally {
    const crds = cluster.toolchain.files.gatewayApiCrds;
    cluster.kubectl([
      'apply',
      '--server-side',
      '-f',
      join(crds, 'gateway.networking.k8s.io_grpcroutes.yaml'),
    ]);
    cluster.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', CRD]);
  }
  const back = await supportedVersion('True');
  assert.equal(back.reason, 'SupportedVersion');
});

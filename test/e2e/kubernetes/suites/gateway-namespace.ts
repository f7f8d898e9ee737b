// Gateway Namespace Mode end to end: infrastructure in each Gateway's namespace with only the CA there, proxies
// authenticated by projected service account tokens, the controller running with the DESIGN.md §5 RBAC.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call } from '../../../cluster/kube-api.js';
import { E2E_SKIP } from '../install.js';
import { echoNamespace, gateway, gatewayClass, programmedAddress, route, served } from '../traffic.js';

const CONTROLLER = DEFAULT_CONTROLLER_NAME;
let cluster: Cluster;
let _system: string;

/** Runs in the file's before(), once Portico is installed in `sys`. */
export async function setup(c: Cluster, sys: string): Promise<void> {
  cluster = c;
  _system = sys;
  for (const ns of ['gwns-x', 'gwns-y']) await echoNamespace(cluster, ns);
  await gatewayClass(cluster, 'portico', CONTROLLER);
}

test('infrastructure in each Gateway namespace, only the CA there, token-authenticated proxies serve traffic', {
  skip: E2E_SKIP,
}, async () => {
  for (const ns of ['gwns-x', 'gwns-y']) {
    await gateway(cluster, ns, 'gw', 'portico', [{ name: 'http', port: 80 }]);
    await route(cluster, ns, 'web', { namespace: ns, name: 'gw' }, `${ns}.example.com`, 'echo');
  }
  const x = await programmedAddress(cluster, 'gwns-x', 'gw');
  const y = await programmedAddress(cluster, 'gwns-y', 'gw');
  assert.notEqual(x, y);
  const reply = await served(x, 80, 'gwns-x.example.com');
  assert.equal((JSON.parse(reply.body) as { namespace: string }).namespace, 'gwns-x');
  await served(y, 80, 'gwns-y.example.com');

  for (const ns of ['gwns-x', 'gwns-y']) {
    const deployments = await call(cluster, 'GET', `/apis/apps/v1/namespaces/${ns}/deployments`);
    assert.ok(
      asList(deployments.body.items).some((d) => String(d.metadata?.name).startsWith(`proxy-${ns}-gw-`)),
    );
    const ca = await call(cluster, 'GET', `/api/v1/namespaces/${ns}/configmaps/portico-ca`);
    assert.equal(ca.status, 200);
    assert.match(String(ca.body.data?.['ca.crt']), /BEGIN CERTIFICATE/);
    const secrets = await call(cluster, 'GET', `/api/v1/namespaces/${ns}/secrets`);
    assert.ok(!asList(secrets.body.items).some((s) => String(s.metadata?.name).startsWith('portico-')));
  }
});

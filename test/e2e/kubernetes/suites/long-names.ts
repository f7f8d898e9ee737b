// Gateway API v1.7's GatewayNameMaximumLength on the real cluster, past what its conformance test checks (only
// that the status is current): two Gateways named with 253 characters, differing in the last one, each get a
// Deployment, Service and ServiceAccount the API server accepts (every label value within 63 characters), become
// Programmed on their own addresses, and serve their routes. In both deployment modes (in Gateway Namespace Mode
// the standard gateway-name label is on the objects too, and the proxies authenticate as the fleet's account).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import { fleetInfraName, labelValue } from '../../../../src/ir/fleet-infra.js';
import type { Cluster } from '../../../cluster/harness.js';
import { call } from '../../../cluster/kube-api.js';
import { E2E_SKIP } from '../install.js';
import { echoNamespace, gateway, gatewayClass, programmedAddress, route, served } from '../traffic.js';

const NS = 'long-names';
const LONG = `gateway-name-maximum-length-${'a'.repeat(225)}`;
const TWIN = `${LONG.slice(0, -1)}b`;
let cluster: Cluster;
/** Where a fleet's objects are: the controller's namespace, or (Gateway Namespace Mode) the Gateways'. */
let objects: string;

export async function setup(
  c: Cluster,
  controllerNamespace: string,
  deployType: 'ControllerNamespace' | 'GatewayNamespace' = 'ControllerNamespace',
): Promise<void> {
  cluster = c;
  objects = deployType === 'GatewayNamespace' ? NS : controllerNamespace;
  await gatewayClass(cluster, 'portico', DEFAULT_CONTROLLER_NAME);
  await echoNamespace(cluster, NS);
  for (const name of [LONG, TWIN]) await gateway(cluster, NS, name, 'portico', [{ name: 'http', port: 80 }]);
}

test('two 253-character Gateway names: each its own legal objects, Programmed, serving its routes', {
  skip: E2E_SKIP,
}, async () => {
  assert.equal(LONG.length, 253);
  const addresses: string[] = [];
  for (const [i, name] of [LONG, TWIN].entries()) {
    await route(cluster, NS, `r${i}`, { namespace: NS, name }, `r${i}.example.com`, 'echo');
    const address = await programmedAddress(cluster, NS, name, 120_000);
    await served(address, 80, `r${i}.example.com`);
    addresses.push(address);
    // Its Deployment exists under the fleet's name, labelled with the Gateway's name cut and hashed.
    const object = fleetInfraName(`${NS}/${name}`);
    const r = await call(cluster, 'GET', `/apis/apps/v1/namespaces/${objects}/deployments/${object}`);
    assert.equal(r.status, 200, object);
    const labels = (r.body.metadata?.labels ?? {}) as Record<string, string>;
    assert.equal(labels['gateway.portico.io/owning-gateway-name'], labelValue(name));
    assert.equal(labels['gateway.networking.k8s.io/gateway-name'], labelValue(name));
    for (const [key, value] of Object.entries(labels)) assert.ok(value.length <= 63, `${key}=${value}`);
  }
  assert.notEqual(addresses[0], addresses[1]);
  assert.notEqual(labelValue(LONG), labelValue(TWIN));
});

// Merged Gateways end to end: a class whose DataPlaneProxy sets mergeGateways shares one fleet, Service and
// address across its Gateways; a Gateway of another class keeps its own; a contested listener is Conflicted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually } from '../../../cluster/kube-api.js';
import { E2E_SKIP } from '../install.js';
import {
  apply,
  echoNamespace,
  gateway,
  gatewayClass,
  gatewayStatus,
  programmedAddress,
  route,
  served,
} from '../traffic.js';

const CONTROLLER = DEFAULT_CONTROLLER_NAME;
let cluster: Cluster;
let system: string;

/** Runs in the file's before(), once Portico is installed in `sys`. */
export async function setup(c: Cluster, sys: string): Promise<void> {
  cluster = c;
  system = sys;
  await echoNamespace(cluster, 'shop', ['echo-a', 'echo-b']);
}

test('merged Gateways share one Service and address; another class keeps its own; conflicts are reported', {
  skip: E2E_SKIP,
}, async () => {
  await apply(cluster, {
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'DataPlaneProxy',
    metadata: { name: 'merged', namespace: system },
    spec: { mergeGateways: true },
  } as never);
  await gatewayClass(cluster, 'merged', CONTROLLER, { namespace: system, name: 'merged' });
  await gatewayClass(cluster, 'single', CONTROLLER);
  await gateway(cluster, 'shop', 'first', 'merged', [
    { name: 'http', port: 8080, hostname: 'a.example.com' },
  ]);
  await gateway(cluster, 'shop', 'second', 'merged', [
    { name: 'http', port: 8081, hostname: 'b.example.com' },
    { name: 'clash', port: 8080, hostname: 'a.example.com' },
  ]);
  await gateway(cluster, 'shop', 'alone', 'single', [{ name: 'http', port: 8080 }]);
  await route(cluster, 'shop', 'ra', { namespace: 'shop', name: 'first' }, 'a.example.com', 'echo-a');
  await route(
    cluster,
    'shop',
    'rb',
    { namespace: 'shop', name: 'second', sectionName: 'http' },
    'b.example.com',
    'echo-b',
  );
  await route(cluster, 'shop', 'rc', { namespace: 'shop', name: 'alone' }, 'c.example.com', 'echo-b');

  const first = await programmedAddress(cluster, 'shop', 'first');
  const alone = await programmedAddress(cluster, 'shop', 'alone');
  const second = await eventually(
    async () => {
      const gw = await gatewayStatus(cluster, 'shop', 'second');
      const address = asList(gw.status?.addresses)[0]?.value;
      return typeof address === 'string' ? String(address) : undefined;
    },
    'an address for the second merged Gateway',
    40_000,
  );
  assert.equal(first, second, 'merged Gateways share one address');
  assert.notEqual(first, alone, 'another class keeps its own address');

  const a = await served(first, 8080, 'a.example.com');
  assert.equal((JSON.parse(a.body) as { service: string }).service, 'echo-a');
  const b = await served(first, 8081, 'b.example.com');
  assert.equal((JSON.parse(b.body) as { service: string }).service, 'echo-b');
  await served(alone, 8080, 'c.example.com');

  const services = await call(
    cluster,
    'GET',
    `/api/v1/namespaces/${system}/services?labelSelector=gateway.portico.io%2Fowning-gatewayclass%3Dmerged`,
  );
  const items = asList(services.body.items);
  assert.equal(items.length, 1);
  assert.deepEqual(
    asList(items[0]?.spec?.ports)
      .map((p) => Number(p.port))
      .sort(),
    [8080, 8081],
  );

  await eventually(async () => {
    const gw = await gatewayStatus(cluster, 'shop', 'second');
    const clash = asList(gw.status?.listeners).find((l) => l.name === 'clash');
    const conflicted = asList(clash?.conditions).find((c) => c.type === 'Conflicted');
    return conflicted?.status === 'True' && conflicted.reason === 'HostnameConflict' ? true : undefined;
  }, 'the contested listener Conflicted/HostnameConflict');
});

// spec.addresses in standalone mode: a loopback address of the pool that a Gateway asks for is the one its fleet
// serves on, also when asked for after the fleet started elsewhere; one outside the pool cannot be given, so the
// Gateway is served at a pool address and says Programmed=False, AddressNotUsable. Routability (GEP-5093): the
// conformance sentinel is met and reported as asked; Cluster cannot be (no Service CIDR on a host), so the
// Gateway says AddressNotAssigned and NotAssigned, and its fleet serves on.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  adminResources,
  condition,
  echoBody,
  eventually,
  exampleCopy,
  type GatewayStatusView,
  programmedAddress,
  startStandalone,
  untilStatus,
} from './harness.js';

async function gatewayStatus(admin: string, name: string): Promise<GatewayStatusView | undefined> {
  const [gateway] = await adminResources(admin, `?kind=Gateway&namespace=default&name=${name}`);
  return gateway?.status as GatewayStatusView | undefined;
}

test('a requested pool address is served on, even asked for later; one outside the pool is AddressNotUsable', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.26.0/24', stateDir });
  const first = await programmedAddress(c.admin, 'default', 'eg');
  assert.notEqual(first, '127.0.26.77');

  const file = join(files, 'gateway.yaml');
  const text = await readFile(file, 'utf8');
  const askingFor = (entry: string) =>
    text.replace(
      /(\nkind: Gateway\n[\s\S]*?\nspec:\n)/,
      `$1  addresses:\n    - type: IPAddress\n      ${entry}\n`,
    );
  const asking = (address: string) => askingFor(`value: ${address}`);
  assert.notEqual(asking('127.0.26.77'), text, 'the Gateway of the quickstart is where the test expects it');
  await writeFile(file, asking('127.0.26.77'));
  const moved = await eventually('the Gateway Programmed at 127.0.26.77', async () => {
    const status = await gatewayStatus(c.admin, 'eg');
    const programmed = condition(status?.conditions, 'Programmed')?.status === 'True';
    return programmed && status?.addresses?.[0]?.value === '127.0.26.77' ? status : undefined;
  });
  assert.deepEqual(moved.addresses, [{ type: 'IPAddress', value: '127.0.26.77', routability: '' }]);
  assert.equal(echoBody(await untilStatus('127.0.26.77', 8080, 'www.example.com', '/', 200)).pod, 'web');

  await writeFile(file, asking('192.0.2.10'));
  const refused = await eventually('the Gateway AddressNotUsable', async () => {
    const status = await gatewayStatus(c.admin, 'eg');
    return condition(status?.conditions, 'Programmed')?.reason === 'AddressNotUsable' ? status : undefined;
  });
  assert.match(
    condition(refused.conditions, 'Programmed')?.message ?? '',
    /no address of the fleet is 192\.0\.2\.10: it has 127\.0\.26\.77/,
  );
  // Still served, at the pool address it had.
  assert.equal(echoBody(await untilStatus('127.0.26.77', 8080, 'www.example.com', '/', 200)).pod, 'web');

  await writeFile(file, askingFor('routability: testing.x-k8s.io/sentinel'));
  const sentinel = await eventually('the sentinel reported', async () => {
    const status = await gatewayStatus(c.admin, 'eg');
    const ok = condition(status?.conditions, 'AddressesAssigned')?.status === 'True';
    return ok && condition(status?.conditions, 'Programmed')?.status === 'True' ? status : undefined;
  });
  assert.deepEqual(sentinel.addresses, [
    { type: 'IPAddress', value: '127.0.26.77', routability: 'testing.x-k8s.io/sentinel' },
  ]);

  await writeFile(file, askingFor('routability: Cluster'));
  const cluster = await eventually('the Cluster entry unmet', async () => {
    const status = await gatewayStatus(c.admin, 'eg');
    return condition(status?.conditions, 'AddressesAssigned')?.reason === 'NotAssigned' ? status : undefined;
  });
  assert.equal(condition(cluster.conditions, 'Programmed')?.reason, 'AddressNotAssigned');
  assert.match(condition(cluster.conditions, 'Programmed')?.message ?? '', /an address \(Cluster\)/);
  assert.equal(cluster.addresses, undefined);
  assert.equal(echoBody(await untilStatus('127.0.26.77', 8080, 'www.example.com', '/', 200)).pod, 'web');
});

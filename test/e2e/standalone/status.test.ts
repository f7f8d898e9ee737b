// Status as `portico get` shows it: the translator's (`portico translate` on the same files) plus addresses,
// AddressesAssigned and Programmed; listeners that cannot bind (port in use, a proxy's reserved port) carry a condition.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { PORTICO_MAIN } from '../../support/portico.js';
import {
  adminResources,
  condition,
  defer,
  eventually,
  exampleCopy,
  type GatewayStatusView,
  PORTICO_CLASS_YAML,
  programmedAddress,
  startStandalone,
  untilStatus,
} from './harness.js';

interface Listed {
  kind: string;
  metadata: { name: string; namespace?: string };
  status?: unknown;
}

function portico(...args: string[]): string {
  const result = spawnSync(process.execPath, [PORTICO_MAIN, ...args], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout;
}

/** Status without what only a running data plane knows: addresses (and whether they are assigned), Programmed, transition times. */
function comparable(status: unknown): unknown {
  return JSON.parse(JSON.stringify(status ?? null), (key, value: unknown) => {
    if (key === 'addresses' || key === 'lastTransitionTime') return undefined;
    if (key === 'conditions' && Array.isArray(value)) {
      return value.filter((c: { type: string }) => c.type !== 'Programmed' && c.type !== 'AddressesAssigned');
    }
    return value;
  });
}

const BROKEN_ROUTES = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: missing-backend
  namespace: default
spec:
  parentRefs: [{name: eg}]
  hostnames: [missing.example.com]
  rules:
    - backendRefs: [{name: nowhere, port: 3000}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: missing-parent
  namespace: default
spec:
  parentRefs: [{name: no-such-gateway}]
  rules:
    - backendRefs: [{name: backend-1, port: 3000}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata:
  name: grpc-missing-backend
  namespace: default
spec:
  parentRefs: [{name: eg}]
  hostnames: [grpc.example.com]
  rules:
    - matches: [{method: {service: echo.Echo, method: Say}}]
      backendRefs: [{name: nowhere, port: 3000}]
`;

test('portico get shows the statuses portico translate computes for the same files', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'merged-gateways', ['one']);
  await writeFile(join(files, 'broken-routes.yaml'), BROKEN_ROUTES);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.51.0/24', stateDir });
  await programmedAddress(c.admin, 'default', 'eg');
  await programmedAddress(c.admin, 'default', 'merged-eg-1');

  const translated = JSON.parse(portico('translate', '-f', files, '-o', 'json')) as Listed[];
  const key = (o: Listed) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;
  const expected = new Map(translated.map((o) => [key(o), comparable(o.status)]));
  let compared = 0;
  for (const [type, kind] of [
    ['gatewayclasses', 'GatewayClass'],
    ['gateways', 'Gateway'],
    ['httproutes', 'HTTPRoute'],
    ['grpcroutes', 'GRPCRoute'],
  ] as const) {
    const listed = JSON.parse(portico('get', type, '-A', '-o', 'json', '--admin-address', c.admin)) as {
      items: Listed[];
    };
    assert.ok(listed.items.length > 0, type);
    for (const item of listed.items) {
      assert.equal(item.kind, kind);
      assert.deepEqual(comparable(item.status), expected.get(key(item)) ?? null, key(item));
      compared++;
    }
  }
  assert.equal(compared, 2 + 4 + 6 + 1);
  // The broken references show up as their conditions, through get too.
  const route = (await adminResources(c.admin, '?kind=HTTPRoute&name=missing-backend'))[0];
  const status = route?.status as
    | { parents?: { conditions?: { type: string; status: string; reason: string; message: string }[] }[] }
    | undefined;
  assert.equal(condition(status?.parents?.[0]?.conditions, 'ResolvedRefs')?.reason, 'BackendNotFound');
  const grpc = (await adminResources(c.admin, '?kind=GRPCRoute&name=grpc-missing-backend'))[0];
  const grpcStatus = grpc?.status as typeof status;
  assert.equal(condition(grpcStatus?.parents?.[0]?.conditions, 'Accepted')?.status, 'True');
  assert.equal(condition(grpcStatus?.parents?.[0]?.conditions, 'ResolvedRefs')?.reason, 'BackendNotFound');
});

async function listenerCondition(admin: string, gateway: string, listener: string) {
  return eventually(`listener ${gateway}/${listener} not programmed`, async () => {
    const [g] = await adminResources(admin, `?kind=Gateway&namespace=default&name=${gateway}`);
    const status = g?.status as GatewayStatusView | undefined;
    const c = condition(status?.listeners?.find((l) => l.name === listener)?.conditions, 'Programmed');
    return c?.status === 'False' && c.reason === 'Invalid' ? c : undefined;
  });
}

function gateway(listeners: [string, number][]): string {
  return `${PORTICO_CLASS_YAML}apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: www, namespace: default}
spec:
  parentRefs: [{name: eg}]
  hostnames: [www.example.com]
  rules:
    - backendRefs: [{name: backend-web, port: 3000}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: eg
  namespace: default
spec:
  gatewayClassName: portico
  listeners:
${listeners.map(([name, port]) => `    - {name: ${name}, protocol: HTTP, port: ${port}}`).join('\n')}
`;
}

test('a listener that cannot bind becomes its condition; the other listeners keep serving', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web']);
  const gatewayFile = join(files, 'gateway.yaml');
  const write = (listeners: [string, number][]) => writeFile(gatewayFile, gateway(listeners));
  await write([['http', 8080]]);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.52.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'www.example.com', '/', 200);

  // Something else holds a port on the fleet's address; a listener there cannot bind.
  const squatter = createServer();
  await new Promise<void>((resolve) => squatter.listen(0, address, resolve));
  defer(t, () => new Promise<void>((resolve) => squatter.close(() => resolve())));
  const taken = (squatter.address() as { port: number }).port;
  await write([
    ['http', 8080],
    ['taken', taken],
    ['metrics', 19001],
  ]);
  const inUse = await listenerCondition(c.admin, 'eg', 'taken');
  assert.match(inUse.message, /EADDRINUSE/);
  const reserved = await listenerCondition(c.admin, 'eg', 'metrics');
  assert.match(reserved.message, /port 19001 is reserved for the proxy's metrics endpoint/);
  await waitForLine(c, /listener metrics: Programmed=False: Invalid: port 19001 is reserved/);
  // The listener that binds still serves, and the controller did not crash.
  await untilStatus(address, 8080, 'www.example.com', '/', 200);
  assert.equal(c.child.process.exitCode, null);
});

async function waitForLine(c: { child: { stdout: () => string } }, pattern: RegExp): Promise<void> {
  await eventually(`output ${pattern}`, async () => (pattern.test(c.child.stdout()) ? true : undefined));
}

// gRPC in standalone mode: a GRPCRoute file next to the quickstart serves @grpc/grpc-js calls over h2c through the
// Gateway's proxy, an unmatched method is UNIMPLEMENTED, and calls running through edits of the route (its
// backend, then a new hostname) never fail.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { ECHO_METHOD } from '../../../src/echo/grpc.js';
import { grpcClient, grpcEcho } from '../../support/h2.js';
import { eventually, exampleCopy, programmedAddress, startStandalone } from './harness.js';

function grpcRoute(hostnames: string[], service: string): string {
  return `apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata:
  name: echo
spec:
  parentRefs:
    - name: eg
  hostnames: [${hostnames.join(', ')}]
  rules:
    - matches:
        - method: {service: portico.echo.v1.Echo, method: Echo}
      backendRefs:
        - name: ${service}
          port: 3000
`;
}

test('a GRPCRoute file serves gRPC calls; edits of the route while calls run fail none', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  const routeFile = join(files, 'grpc.yaml');
  await writeFile(routeFile, grpcRoute(['grpc.example.com'], 'backend-api'));
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.43.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const client = grpcClient(8080, 'grpc.example.com', address);
  t.after(() => client.close());
  const first = await eventually('a gRPC call through the proxy', () =>
    grpcEcho(client, 'hello', ECHO_METHOD, 5_000).catch(() => undefined),
  );
  assert.deepEqual([first.message, first.pod, first.authority], ['hello', 'api', 'grpc.example.com']);
  await assert.rejects(grpcEcho(client, 'x', '/portico.echo.v1.Echo/Missing', 5_000), {
    code: grpc.status.UNIMPLEMENTED,
  });

  let running = true;
  let calls = 0;
  const failures: string[] = [];
  const loop = async () => {
    while (running) {
      try {
        await grpcEcho(client, 'steady', ECHO_METHOD, 5_000);
      } catch (error) {
        failures.push((error as Error).message);
      }
      calls++;
    }
  };
  const loops = [loop(), loop()];
  try {
    // Another backend: the calls move to it, none fails on the way.
    await writeFile(routeFile, grpcRoute(['grpc.example.com'], 'backend-web'));
    await eventually('calls answered by the new backend', async () => {
      const reply = await grpcEcho(client, 'which', ECHO_METHOD, 5_000).catch(() => undefined);
      return reply?.pod === 'web' ? true : undefined;
    });
    // A second hostname: served too, the first keeps working.
    await writeFile(routeFile, grpcRoute(['grpc.example.com', 'grpc2.example.com'], 'backend-web'));
    const second = grpcClient(8080, 'grpc2.example.com', address);
    t.after(() => second.close());
    const reply = await eventually('the added hostname', () =>
      grpcEcho(second, 'two', ECHO_METHOD, 5_000).catch(() => undefined),
    );
    assert.equal(reply.authority, 'grpc2.example.com');
  } finally {
    running = false;
    await Promise.all(loops);
  }
  assert.deepEqual(failures, []);
  assert.ok(calls > 0, 'calls ran');
});

// HTTP/2 and gRPC end to end on the real cluster: a GRPCRoute served to @grpc/grpc-js clients over h2c through the
// Gateway's address, an unmatched method answered UNIMPLEMENTED by the proxy, an HTTPRoute reaching a Service port
// with appProtocol kubernetes.io/h2c, and continuous gRPC calls through a route edit and a rolling restart of the
// fleet with no failed call.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { ECHO_METHOD } from '../../../../src/echo/grpc.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually } from '../../../cluster/kube-api.js';
import { grpcClient, grpcEcho } from '../../../support/h2.js';
import { proxyPod } from '../handover.js';
import { E2E_SKIP } from '../install.js';
import { apply, echoBackend, gateway, namespace, programmedAddress } from '../traffic.js';

const NS = 'grpc-e2e';
const HOST = 'grpc.example.com';
const NEXT_HOST = 'grpc-next.example.com';
/** The Gateway's name, unique among the suites: its proxy pods live in the controller's namespace. */
const GATEWAY = 'grpc';
let cluster: Cluster;
let system: string;

/** A gRPC client to the Gateway's port 80 (h2c, prior knowledge) that sends `authority` as :authority. */
function client(address: string, authority: string): grpc.Client {
  return grpcClient(80, authority, address);
}

const echo = (c: grpc.Client, message: string) => grpcEcho(c, message, ECHO_METHOD, 5_000);

/** A unary call to a method the route does not serve; resolves with the gRPC status code. */
function statusOf(c: grpc.Client, path: string): Promise<number> {
  return grpcEcho(c, '', path, 5_000).then(
    () => grpc.status.OK,
    (error: grpc.ServiceError) => error.code,
  );
}

/** The GRPCRoute `echo`: the Echo method of the echo service, for these hostnames. */
async function grpcRoute(hostnames: string[]): Promise<void> {
  await apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GRPCRoute',
    metadata: { name: 'echo', namespace: NS },
    spec: {
      parentRefs: [{ name: GATEWAY }],
      hostnames,
      rules: [
        {
          matches: [{ method: { service: 'portico.echo.v1.Echo', method: 'Echo' } }],
          backendRefs: [{ name: 'echo', port: 8080 }],
        },
      ],
    },
  } as never);
}

/** Runs in the file's before(), once Portico is installed. */
export async function setup(c: Cluster, sys: string): Promise<void> {
  cluster = c;
  system = sys;
  await namespace(cluster, NS);
  await echoBackend(cluster, NS, 'echo');
  // The same pods behind a second Service whose port says h2c: an HTTPRoute to it is proxied over h2c.
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'echo-h2c', namespace: NS },
    spec: {
      selector: { app: 'echo' },
      ports: [{ name: 'h2c', port: 8080, targetPort: 3000, appProtocol: 'kubernetes.io/h2c' }],
    },
  } as never);
  await gateway(cluster, NS, GATEWAY, 'portico', [{ name: 'http', port: 80 }]);
}

async function served(address: string, authority = HOST): Promise<grpc.Client> {
  const c = client(address, authority);
  await eventually(
    async () => {
      try {
        return (await echo(c, 'ready')).message === 'ready' ? true : undefined;
      } catch {
        return undefined;
      }
    },
    `gRPC echo for ${authority} through ${address}:80`,
    60_000,
  );
  return c;
}

test('GRPCRoute: unary calls over h2c through the Gateway, UNIMPLEMENTED for an unmatched method, h2c to an appProtocol backend', {
  skip: E2E_SKIP,
}, async () => {
  await grpcRoute([HOST]);
  await apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'h2c', namespace: NS },
    spec: {
      parentRefs: [{ name: GATEWAY }],
      hostnames: ['h2c.example.com'],
      rules: [{ backendRefs: [{ name: 'echo-h2c', port: 8080 }] }],
    },
  } as never);
  const address = await programmedAddress(cluster, NS, GATEWAY);
  const c = await served(address);
  const reply = await echo(c, 'hello');
  assert.equal(reply.message, 'hello');
  assert.equal(reply.authority, HOST);
  assert.equal(reply.path, '/portico.echo.v1.Echo/Echo');
  assert.equal(await statusOf(c, '/portico.echo.v1.Echo/Missing'), grpc.status.UNIMPLEMENTED);
  c.close();
  // The route's status says it is accepted, as an HTTPRoute's would.
  const status = await call(
    cluster,
    'GET',
    `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/grpcroutes/echo`,
  );
  const parent = asList(status.body.status?.parents)[0];
  const accepted = asList(parent?.conditions).find((x) => x.type === 'Accepted');
  assert.equal(accepted?.status, 'True');
  // A gRPC client through the HTTPRoute: the backend is reached over h2c (an HTTP/1.1 request could not carry it).
  const h2c = client(address, 'h2c.example.com');
  const viaHttpRoute = await eventually(
    async () => echo(h2c, 'through an HTTPRoute').catch(() => undefined),
    'gRPC through the HTTPRoute to the h2c Service',
    60_000,
  );
  assert.equal(viaHttpRoute.message, 'through an HTTPRoute');
  h2c.close();
});

test('continuous gRPC calls through a GRPCRoute edit and a rolling restart of the fleet: no call fails', {
  skip: E2E_SKIP,
}, async () => {
  await grpcRoute([HOST]);
  const address = await programmedAddress(cluster, NS, GATEWAY);
  const clients = [await served(address), await served(address)];
  let stopped = false;
  let calls = 0;
  const failures: string[] = [];
  const loops = clients.map(async (c) => {
    while (!stopped) {
      try {
        await echo(c, 'traffic');
      } catch (error) {
        failures.push(`${(error as grpc.ServiceError).code}: ${(error as Error).message}`);
      }
      calls++;
    }
  });
  const flowing = async (n: number) => {
    const target = calls + n;
    await eventually(async () => (calls >= target ? true : undefined), `${n} gRPC calls`, 30_000);
  };
  try {
    await flowing(50);
    // The edit is applied (a new hostname is served) while the calls on the old one keep succeeding.
    await grpcRoute([HOST, NEXT_HOST]);
    (await served(address, NEXT_HOST)).close();
    await flowing(50);
    const pod = await proxyPod(cluster, system, GATEWAY);
    const selector = `gateway.portico.io/owning-gateway-namespace=${NS},gateway.portico.io/owning-gateway-name=${GATEWAY}`;
    cluster.kubectl(['rollout', 'restart', 'deployment', '-n', system, '-l', selector]);
    await eventually(
      async () => {
        const old = await call(cluster, 'GET', `/api/v1/namespaces/${system}/pods/${pod.metadata?.name}`);
        if (old.status !== 404) return undefined;
        const next = await proxyPod(cluster, system, GATEWAY);
        return next.metadata?.name !== pod.metadata?.name ? true : undefined;
      },
      'the proxy pod replaced by a ready new one',
      120_000,
    );
    await flowing(50);
  } finally {
    stopped = true;
    await Promise.all(loops);
    for (const c of clients) c.close();
  }
  assert.deepEqual(failures.slice(0, 10), [], `${failures.length} of ${calls} calls failed`);
  assert.ok(calls >= 150);
});

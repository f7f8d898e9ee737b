// Controller Namespace Mode end to end on the real cluster: the installed controller, two Gateways → two fleets.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import { fleetInfraName } from '../../../../src/ir/fleet-infra.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually } from '../../../cluster/kube-api.js';
import { startPortico, waitForOutputWithin } from '../../../support/child.js';
import { httpRequest } from '../../../support/http.js';
import { PORTICO_MAIN } from '../../../support/portico.js';
import { E2E_SKIP } from '../install.js';
import {
  apply,
  condition,
  echoNamespace,
  gateway,
  gatewayClass,
  gatewayStatus,
  get,
  programmedAddress,
  route,
  served,
} from '../traffic.js';

/** The echo reply with header names in lower case (the echo backend prints them canonically cased). */
function echoReply(body: string) {
  const parsed = JSON.parse(body) as {
    headers: Record<string, string[]>;
    service: string;
    namespace: string;
  };
  const headers = Object.fromEntries(Object.entries(parsed.headers).map(([k, v]) => [k.toLowerCase(), v]));
  return { ...parsed, headers };
}

const CONTROLLER = DEFAULT_CONTROLLER_NAME;
let cluster: Cluster;
let system: string;

/** Runs in the file's before(), once Portico is installed in `sys`. */
export async function setup(c: Cluster, sys: string): Promise<void> {
  cluster = c;
  system = sys;
  await echoNamespace(cluster, 'apps', ['echo-a', 'echo-b']);
}

test('one GatewayClass, two Gateways: two fleets, two addresses, routes by Host, 404 for unknown hosts', {
  skip: E2E_SKIP,
}, async () => {
  await gatewayClass(cluster, 'portico', CONTROLLER);
  await gateway(cluster, 'apps', 'gw-a', 'portico', [{ name: 'http', port: 80 }]);
  await gateway(cluster, 'apps', 'gw-b', 'portico', [{ name: 'http', port: 80 }]);
  await route(cluster, 'apps', 'route-a', { namespace: 'apps', name: 'gw-a' }, 'a.example.com', 'echo-a');
  await route(cluster, 'apps', 'route-b', { namespace: 'apps', name: 'gw-b' }, 'b.example.com', 'echo-b');
  const [addressA, addressB] = await Promise.all([
    programmedAddress(cluster, 'apps', 'gw-a'),
    programmedAddress(cluster, 'apps', 'gw-b'),
  ]);
  assert.notEqual(addressA, addressB);
  // Programmed means the Service can send traffic: each fleet's Service already has a ready proxy pod.
  for (const gw of ['gw-a', 'gw-b']) {
    const service = fleetInfraName(`apps/${gw}`);
    const slices = await call(
      cluster,
      'GET',
      `/apis/discovery.k8s.io/v1/namespaces/${system}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D${service}`,
    );
    const ready = asList(slices.body.items)
      .flatMap((slice) => asList(slice.endpoints))
      .filter((e) => e.targetRef?.kind === 'Pod' && String(e.conditions?.ready) !== 'false');
    assert.ok(ready.length > 0, `a ready proxy endpoint of ${service} once apps/${gw} is Programmed`);
  }

  const services = await call(
    cluster,
    'GET',
    `/api/v1/namespaces/${system}/services?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dportico-gateway`,
  );
  const names = asList(services.body.items).map((s) => String(s.metadata?.name));
  // Other suites of this file have their own fleets here too: count this test's.
  assert.equal(names.filter((n) => n.startsWith('proxy-apps-')).length, 2);
  assert.ok(names.some((n) => n.startsWith('proxy-apps-gw-a-')));
  assert.ok(names.some((n) => n.startsWith('proxy-apps-gw-b-')));

  const a = await served(addressA, 80, 'a.example.com');
  const echo = echoReply(a.body);
  assert.equal(echo.service, 'echo-a');
  assert.equal(echo.namespace, 'apps');
  for (const h of ['x-forwarded-for', 'x-forwarded-proto', 'x-request-id']) assert.ok(echo.headers[h], h);
  assert.ok(echo.headers['x-portico-internal'] ?? echo.headers['x-portico-external-address']);
  assert.deepEqual(echo.headers['x-portico-expected-rq-timeout-ms'], ['15000']);
  assert.equal(a.headers.server, 'portico');

  const b = await served(addressB, 80, 'b.example.com');
  assert.equal(echoReply(b.body).service, 'echo-b');
  // Each Gateway serves only its own hostnames.
  const wrong = await get(addressA, 80, 'b.example.com');
  assert.equal(wrong.status, 404);
  assert.equal(wrong.body, '');
  const unknown = await get(addressB, 80, 'nobody.example.com');
  assert.equal(unknown.status, 404);
  assert.equal(unknown.headers['content-length'], '0');

  const gw = await gatewayStatus(cluster, 'apps', 'gw-a');
  assert.equal(condition(gw, 'Programmed')?.observedGeneration, gw.metadata?.generation);
});

/** The built CLI, run to its end without blocking this process. */
function portico(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [PORTICO_MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    stdout += s;
  });
  child.stderr.setEncoding('utf8').on('data', (s: string) => {
    stderr += s;
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

test('describe and get read the cluster through a kubeconfig, as egctl and kubectl do', {
  skip: E2E_SKIP,
}, async () => {
  await echoNamespace(cluster, 'describe', ['echo-d']);
  await gatewayClass(cluster, 'portico', CONTROLLER);
  await gateway(cluster, 'describe', 'gw', 'portico', [{ name: 'http', port: 80 }]);
  await route(
    cluster,
    'describe',
    'served',
    { namespace: 'describe', name: 'gw' },
    'd.example.com',
    'echo-d',
  );
  await route(cluster, 'describe', 'broken', { namespace: 'describe', name: 'gw' }, 'x.example.com', 'gone');
  await route(
    cluster,
    'describe',
    'orphan',
    { namespace: 'describe', name: 'nope' },
    'o.example.com',
    'echo-d',
  );
  const address = await programmedAddress(cluster, 'describe', 'gw');
  await served(address, 80, 'd.example.com');
  const kubeconfig = ['--kubeconfig', cluster.kubeconfigPath];

  const gw = await eventually(async () => {
    const r = await portico('describe', 'gateway', 'gw', '-n', 'describe', ...kubeconfig);
    assert.equal(r.code, 0, r.stderr);
    // The fleet's Deployment reports its ready replica a moment after the Gateway is Programmed.
    return /^ {2}Replicas: +1\/1 ready/m.test(r.stdout) ? r.stdout : undefined;
  }, "describe showing the fleet's ready proxy");
  // Each proxy pod, with both containers ready and nothing wrong to say.
  assert.match(gw, /^ {4}proxy-describe-gw-\S+ +2\/2 +Running +0 *$/m);
  assert.match(gw, new RegExp(`^Addresses: +${address.replaceAll('.', '\\.')}$`, 'm'));
  assert.match(gw, /^ {2}Programmed +True +Programmed/m);
  assert.match(gw, /^ {2}HTTPRoute +describe +broken +\* +True +False$/m);
  assert.match(gw, /^ {2}HTTPRoute +describe +served +\* +True +True$/m);
  assert.match(gw, new RegExp(`^Fleet: {2}describe/gw\n {2}Deployment: +${system}/proxy-describe-gw-`, 'm'));

  const broken = await portico('describe', 'httproute', 'broken', '-n', 'describe', ...kubeconfig);
  assert.match(broken.stdout, /^ {2}parent Gateway describe\/gw: ResolvedRefs=False \(BackendNotFound\)/m);
  const orphan = await portico('describe', 'httproute', 'orphan', '-n', 'describe', ...kubeconfig);
  assert.match(orphan.stdout, /^Status: +attached to no Gateway/m);
  assert.match(orphan.stdout, /Gateway describe\/nope: no status: Gateway describe\/nope does not exist/);

  const listed = await portico('get', 'httproutes', '-n', 'describe', ...kubeconfig);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, /^broken +\["x\.example\.com"\] +True +False/m);
  assert.match(listed.stdout, /^orphan +\["o\.example\.com"\] +<none> +<none>/m);

  // get -w on the API server's watch stream: the table, then one row when a route changes.
  const watcher = startPortico(['get', 'httproutes', '-n', 'describe', '-w', ...kubeconfig]);
  try {
    await waitForOutputWithin(watcher, /^served +\["d\.example\.com"\]/m);
    await route(
      cluster,
      'describe',
      'broken',
      { namespace: 'describe', name: 'gw' },
      'y.example.com',
      'gone',
    );
    await waitForOutputWithin(watcher, /^broken +\["y\.example\.com"\]/m);
    assert.equal(watcher.stdout().match(/^NAME /gm)?.length, 1, 'the header is printed once');
    watcher.process.kill('SIGINT');
    assert.equal(await watcher.exited, 0);
  } finally {
    watcher.process.kill('SIGKILL');
  }
});

test('an AccessPolicy reads a Secret labelled as credentials; an unlabelled one is refused by name, failing closed', {
  skip: E2E_SKIP,
}, async () => {
  // The describe test's Gateway and echo backend; this route and policy are its own.
  await route(
    cluster,
    'describe',
    'guarded',
    { namespace: 'describe', name: 'gw' },
    'g.example.com',
    'echo-d',
  );
  const sha = createHash('sha1').update('demo-password').digest('base64');
  const users = (name: string, labelled: boolean) =>
    apply(cluster, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        namespace: 'describe',
        ...(labelled ? { labels: { 'gateway.portico.io/credentials': 'true' } } : {}),
      },
      type: 'Opaque',
      stringData: { '.htpasswd': `demo:{SHA}${sha}\n` },
    });
  await users('users', true);
  await users('users-unlabelled', false);
  const policy = (secret: string) =>
    apply(cluster, {
      apiVersion: 'gateway.portico.io/v1alpha1',
      kind: 'AccessPolicy',
      metadata: { name: 'guard', namespace: 'describe' },
      spec: {
        targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'guarded' }],
        basicAuth: { secretRef: { name: secret } },
      },
    });
  await policy('users');
  const address = await programmedAddress(cluster, 'describe', 'gw');
  const basic = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
  const status = async (authorization?: string) =>
    (
      await httpRequest(80, '/', {
        address,
        host: 'g.example.com',
        timeoutMs: 5000,
        ...(authorization === undefined ? {} : { headers: { authorization } }),
      })
    ).status;
  await eventually(
    async () => ((await status()) === 401 ? true : undefined),
    'the route asking for credentials',
  );
  assert.equal(await status(basic), 200);
  assert.equal(await status(`Basic ${Buffer.from('demo:wrong').toString('base64')}`), 401);

  // The same file unlabelled: never sent to the controller, so the policy names it and the label, and refuses all.
  await policy('users-unlabelled');
  const message = await eventually(async () => {
    const r = await call(
      cluster,
      'GET',
      '/apis/gateway.portico.io/v1alpha1/namespaces/describe/accesspolicies/guard',
    );
    const ancestors = (r.body.status?.ancestors ?? []) as {
      conditions?: { type: string; status: string; message: string }[];
    }[];
    const accepted = ancestors[0]?.conditions?.find((c) => c.type === 'Accepted');
    return accepted?.status === 'False' ? accepted.message : undefined;
  }, 'the policy refused for its unlabelled Secret');
  assert.match(
    message,
    /Secret describe\/users-unlabelled not found \(on Kubernetes, label it gateway\.portico\.io\/credentials=true/,
  );
  await eventually(
    async () => ((await status(basic)) !== 200 ? true : undefined),
    'the route failing closed',
  );
});

test('several GatewayClasses on one controller are all Accepted', { skip: E2E_SKIP }, async () => {
  await gatewayClass(cluster, 'portico-two', CONTROLLER);
  await gatewayClass(cluster, 'portico-three', CONTROLLER);
  await gatewayClass(cluster, 'someone-else', 'example.com/other-controller');
  for (const name of ['portico', 'portico-two', 'portico-three']) {
    await eventually(async () => {
      const r = await call(cluster, 'GET', `/apis/gateway.networking.k8s.io/v1/gatewayclasses/${name}`);
      return condition(r.body, 'Accepted')?.status === 'True' ? true : undefined;
    }, `GatewayClass ${name} Accepted`);
  }
  const other = await call(cluster, 'GET', '/apis/gateway.networking.k8s.io/v1/gatewayclasses/someone-else');
  // Another controller's class keeps the status the CRD defaults it to: Portico writes nothing there.
  const accepted = condition(other.body, 'Accepted');
  assert.equal(accepted?.status, 'Unknown', 'no status written on another controller’s class');
  assert.equal(accepted?.reason, 'Pending');
});

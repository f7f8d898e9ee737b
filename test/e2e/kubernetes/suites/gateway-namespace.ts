// Gateway Namespace Mode end to end: infrastructure in each Gateway's namespace with only the CA there, proxies
// authenticated by projected service account tokens, the controller running with the DESIGN.md §5 RBAC.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually, type Loose } from '../../../cluster/kube-api.js';
import { httpRequest } from '../../../support/http.js';
import { parsePrometheus, sampleValue } from '../../../support/prometheus.js';
import { AUTHORIZER_PORT, authorizer } from '../authorizer.js';
import { assertNoFailedRequests, duringTraffic, proxyPod } from '../handover.js';
import { E2E_SKIP } from '../install.js';
import {
  apply,
  echoBackend,
  echoNamespace,
  gateway,
  gatewayClass,
  namespace,
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
  for (const ns of ['gwns-x', 'gwns-y']) await echoNamespace(cluster, ns);
  await authorizer(cluster, 'gwns-x', 'authz');
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

test("AccessPolicy in Gateway Namespace Mode: a JWT from a labelled Secret guards a route; rules' policies override it: none, an authorization service, a CIDR deny", {
  skip: E2E_SKIP,
}, async () => {
  // The first test's Gateway in gwns-x; this route (two named rules), its key Secret and policies are the test's own.
  const ns = 'gwns-x';
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'jwks', namespace: ns, labels: { 'gateway.portico.io/credentials': 'true' } },
    type: 'Opaque',
    stringData: { 'jwks.json': JSON.stringify({ keys: [jwk] }) },
  } as never);
  const rule = (name: string, path: string) => ({
    name,
    matches: [{ path: { type: 'PathPrefix', value: path } }],
    backendRefs: [{ group: '', kind: 'Service', name: 'echo', port: 8080, weight: 1 }],
  });
  await apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'guarded', namespace: ns },
    spec: {
      parentRefs: [{ name: 'gw' }],
      hostnames: ['jwt.gwns-x.example.com'],
      rules: [rule('api', '/api'), rule('open', '/open'), rule('ext', '/ext'), rule('closed', '/closed')],
    },
  } as never);
  const target = (sectionName?: string) => ({
    group: 'gateway.networking.k8s.io',
    kind: 'HTTPRoute',
    name: 'guarded',
    ...(sectionName === undefined ? {} : { sectionName }),
  });
  const policy = (name: string, spec: Record<string, unknown>) =>
    apply(cluster, {
      apiVersion: 'gateway.portico.io/v1alpha1',
      kind: 'AccessPolicy',
      metadata: { name, namespace: ns },
      spec,
    } as never);
  await policy('route-jwt', {
    targetRefs: [target()],
    jwt: {
      providers: [
        {
          name: 'corp',
          issuer: 'https://corp.example',
          jwks: { secretRef: { name: 'jwks' } },
          claimToHeaders: [{ claim: 'sub', header: 'x-user' }],
        },
      ],
    },
  });
  await policy('open-rule', { targetRefs: [target('open')], rules: [], defaultAction: 'Allow' });
  await policy('ext-rule', {
    targetRefs: [target('ext')],
    externalAuth: {
      protocol: 'HTTP',
      backendRef: { name: 'authz', port: AUTHORIZER_PORT },
      http: { allowedResponseHeaders: ['x-user'] },
    },
  });
  await policy('closed-rule', {
    targetRefs: [target('closed')],
    rules: [{ name: 'everyone', action: 'Deny', clientCIDRs: ['0.0.0.0/0', '::/0'] }],
    defaultAction: 'Allow',
  });
  const address = await programmedAddress(cluster, ns, 'gw');
  const token = await new SignJWT({ sub: 'alice' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer('https://corp.example')
    .setExpirationTime('10m')
    .sign(privateKey);
  const get = (path: string, authorization?: string) =>
    httpRequest(80, path, {
      address,
      host: 'jwt.gwns-x.example.com',
      timeoutMs: 5000,
      ...(authorization === undefined ? {} : { headers: { authorization } }),
    });
  await eventually(
    async () => ((await get('/api')).status === 401 ? true : undefined),
    'the route asking for a JWT',
    60_000,
  );
  const ok = await get('/api', `Bearer ${token}`);
  assert.equal(ok.status, 200);
  assert.deepEqual((JSON.parse(ok.body) as { headers: Record<string, string[]> }).headers['X-User'], [
    'alice',
  ]);
  assert.equal((await get('/api', 'Bearer not.a.token')).status, 401);
  // The rule's own policy replaces the route's whole (precedence: a rule over its route).
  await eventually(
    async () => ((await get('/open')).status === 200 ? true : undefined),
    'the open rule passing without a token',
  );
  // The authorization service in the cluster decides the ext rule: its user header reaches the backend.
  await eventually(
    async () => ((await get('/ext', 'Bearer good')).status === 200 ? true : undefined),
    'the authorization service letting a good token by',
  );
  const byService = await get('/ext', 'Bearer good');
  assert.deepEqual((JSON.parse(byService.body) as { headers: Record<string, string[]> }).headers['X-User'], [
    'good',
  ]);
  const refusedByService = await get('/ext', `Bearer ${token}`);
  assert.equal(refusedByService.status, 401, 'the service, not the JWT, decides this rule');
  assert.equal(refusedByService.headers['www-authenticate'], 'Bearer');
  // Access rules: every client address denied on the closed rule, with no detail.
  const closed = await get('/closed', `Bearer ${token}`);
  assert.equal(closed.status, 403);
});

/** A token of the controller's own ServiceAccount, as a thief of the controller pod's token would hold. */
async function controllerToken(): Promise<string> {
  const r = await call(
    cluster,
    'POST',
    `/api/v1/namespaces/${system}/serviceaccounts/portico-gateway/token`,
    {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 600 },
    },
  );
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return String(r.body.status?.token);
}

/** A Deployment shaped like a fleet's, with whatever the caller changes. */
function fleetLikeDeployment(ns: string, name: string, image: string): Record<string, unknown> {
  const labels = {
    'app.kubernetes.io/managed-by': 'portico-gateway',
    'gateway.portico.io/controller-namespace': system,
    app: name,
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns, labels },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels },
        spec: { serviceAccountName: name, containers: [{ name: 'proxy', image }] },
      },
    },
  };
}

test("the controller's own token writes only Portico's objects: the admission policy refuses the rest", {
  skip: E2E_SKIP,
}, async () => {
  // The chart installs the policy; RBAC alone lets Gateway Namespace Mode create workloads anywhere.
  const policy = await call(
    cluster,
    'GET',
    `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/gateway-helm-${system}-controller-writes`,
  );
  assert.equal(policy.status, 200);
  const token = await controllerToken();
  const image = String(
    asList(
      (await call(cluster, 'GET', `/apis/apps/v1/namespaces/${system}/deployments/portico-gateway`)).body.spec
        ?.template?.spec?.containers,
    )[0]?.image,
  );
  const refused = (r: { status: number; body: Loose }, what: string) => {
    assert.equal(r.status, 403, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
    assert.match(String(r.body.message), /ValidatingAdmissionPolicy/, what);
  };
  // A fleet-shaped Deployment with the Portico image, in kube-system.
  refused(
    await call(
      cluster,
      'POST',
      '/apis/apps/v1/namespaces/kube-system/deployments',
      fleetLikeDeployment('kube-system', 'proxy-evil', image),
      { token },
    ),
    'a Deployment in kube-system',
  );
  // Anywhere else: another image, or a pod running as another ServiceAccount.
  refused(
    await call(
      cluster,
      'POST',
      '/apis/apps/v1/namespaces/gwns-x/deployments',
      fleetLikeDeployment('gwns-x', 'proxy-miner', 'example.com/miner:1'),
      { token },
    ),
    'a fleet-named Deployment with another image',
  );
  const otherAccount = fleetLikeDeployment('gwns-x', 'proxy-borrow', image);
  (
    otherAccount.spec as { template: { spec: { serviceAccountName: string } } }
  ).template.spec.serviceAccountName = 'default';
  refused(
    await call(cluster, 'POST', '/apis/apps/v1/namespaces/gwns-x/deployments', otherAccount, { token }),
    'a Deployment whose pods run as another ServiceAccount',
  );
  // A workload Portico did not make: not patched, not deleted.
  refused(
    await call(
      cluster,
      'PATCH',
      '/apis/apps/v1/namespaces/gwns-x/deployments/echo',
      { spec: { replicas: 0 } },
      { token, contentType: 'application/merge-patch+json' },
    ),
    'a patch of the echo Deployment',
  );
  refused(
    await call(
      cluster,
      'POST',
      '/api/v1/namespaces/gwns-x/configmaps',
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'sneaky', namespace: 'gwns-x' } },
      { token },
    ),
    'a ConfigMap not named like a fleet object',
  );
  // deletecollection without its labels: each object goes through the policy, the echo Deployment survives.
  await echoNamespace(cluster, 'gwns-policy');
  refused(
    await call(cluster, 'DELETE', '/apis/apps/v1/namespaces/gwns-policy/deployments', undefined, { token }),
    'a deletecollection of every Deployment',
  );
  const echo = await call(cluster, 'GET', '/apis/apps/v1/namespaces/gwns-policy/deployments/echo');
  assert.equal(echo.status, 200);
  assert.equal(echo.body.metadata?.deletionTimestamp, undefined);
  // The fleets the controller made meanwhile were admitted (the test above serves through them).
});

/** Applies a LimitRange giving every container of `ns` without a CPU limit `cpu` as its limit. */
async function cpuLimitRange(ns: string, cpu: string): Promise<void> {
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'LimitRange',
    metadata: { name: 'cpu', namespace: ns },
    spec: { limits: [{ type: 'Container', default: { cpu }, defaultRequest: { cpu: '10m' } }] },
  } as never);
}

/** The proxy's own metrics (port 19001 in the pod), read from the host through the pod network. */
async function proxyMetrics(pod: Loose) {
  const reply = await httpRequest(19001, '/metrics', {
    address: String(pod.status?.podIP),
    timeoutMs: 5_000,
  });
  return parsePrometheus(reply.body);
}

test('a fleet pod with a 2-CPU limit runs 2 workers; a rolling restart under traffic drops nothing; 1 CPU, 1 process', {
  skip: E2E_SKIP,
}, async (t) => {
  const ns = 'gwns-cpu';
  await namespace(cluster, ns);
  await cpuLimitRange(ns, '2');
  await echoBackend(cluster, ns, 'echo');
  await gateway(cluster, ns, 'gw', 'portico', [{ name: 'http', port: 80 }]);
  await route(cluster, ns, 'web', { namespace: ns, name: 'gw' }, 'cpu.example.com', 'echo');
  const address = await programmedAddress(cluster, ns, 'gw');
  await served(address, 80, 'cpu.example.com');
  const pod = await proxyPod(cluster, ns, 'gw');
  const proxy = asList(pod.spec?.containers).find((c) => c.name === 'proxy');
  assert.equal(proxy?.resources?.limits?.cpu, '2');
  // Both workers serve: connections through the Service reach each of them.
  for (let i = 0; i < 16; i++) await served(address, 80, 'cpu.example.com');
  const samples = await proxyMetrics(pod);
  assert.equal(sampleValue(samples, 'portico_proxy_workers'), 2);
  for (const worker of ['0', '1']) {
    assert.ok((sampleValue(samples, 'portico_proxy_worker_connections_total', { worker }) ?? 0) > 0);
  }
  const ready = await httpRequest(19003, '/ready', { address: String(pod.status?.podIP), timeoutMs: 5_000 });
  assert.equal(ready.status, 200);

  // The next pods get 1 CPU: the rollout drains the 2-worker pod under traffic, and the new one is one process.
  await cpuLimitRange(ns, '1');
  const result = await duringTraffic([{ address, port: 80, host: 'cpu.example.com' }], async () => {
    cluster.kubectl([
      'rollout',
      'restart',
      'deployment',
      '-n',
      ns,
      '-l',
      'app.kubernetes.io/component=proxy',
    ]);
    // Polled, not `kubectl rollout status`: a synchronous command would pause the traffic loops meanwhile.
    await eventually(
      async () => {
        const old = await call(cluster, 'GET', `/api/v1/namespaces/${ns}/pods/${pod.metadata?.name}`);
        if (old.status !== 404) return undefined;
        const next = await proxyPod(cluster, ns, 'gw');
        return next.metadata?.name !== pod.metadata?.name ? next : undefined;
      },
      'the 2-worker pod replaced by a ready new one',
      120_000,
    );
  });
  assertNoFailedRequests(t, result);
  const next = await proxyPod(cluster, ns, 'gw');
  const nextProxy = asList(next.spec?.containers).find((c) => c.name === 'proxy');
  assert.equal(nextProxy?.resources?.limits?.cpu, '1');
  const one = await proxyMetrics(next);
  assert.equal(
    sampleValue(one, 'portico_proxy_workers'),
    undefined,
    'one worker serves in the proxy process',
  );
  assert.ok((sampleValue(one, 'portico_requests_total', { code: '200' }) ?? 0) > 0);
});

test('the chart’s PodDisruptionBudget for the controller is accepted and covers exactly the controller pods', {
  skip: E2E_SKIP,
}, async () => {
  const path = `/apis/policy/v1/namespaces/${system}/poddisruptionbudgets/portico-gateway`;
  const deployment = await call(
    cluster,
    'GET',
    `/apis/apps/v1/namespaces/${system}/deployments/portico-gateway`,
  );
  const pdb = await call(cluster, 'GET', path);
  assert.equal(pdb.status, 200, 'installed with controller.podDisruptionBudget.enabled=true');
  assert.equal(pdb.body.spec?.maxUnavailable, 1);
  assert.deepEqual(pdb.body.spec?.selector, deployment.body.spec?.selector);
  // The disruption controller counts the pods the selector matches: the Deployment's replicas and nothing else.
  await eventually(async () => {
    const s = (await call(cluster, 'GET', path)).body.status;
    const d = await call(cluster, 'GET', `/apis/apps/v1/namespaces/${system}/deployments/portico-gateway`);
    const replicas = Number(d.body.status?.readyReplicas);
    return replicas > 0 && Number(s?.expectedPods) === replicas && Number(s?.currentHealthy) === replicas
      ? true
      : undefined;
  }, 'the budget counting the controller pods');
});

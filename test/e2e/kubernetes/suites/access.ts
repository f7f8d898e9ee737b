// AccessPolicy on the real cluster through one small Gateway: OIDC login at a real OpenID provider running in the
// cluster (the toolchain's image of the `oidc-provider` library behind a LoadBalancer Service, so the proxy pod and
// the test's browser on the host reach it at the same issuer URL), an API key from a labelled Secret, and an access
// rule by client CIDR. Each mechanism guards one named rule of the same route.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually } from '../../../cluster/kube-api.js';
import { Browser } from '../../../support/browser.js';
import { type EchoBody, httpRequest } from '../../../support/http.js';
import { E2E_SKIP, RESTRICTED_CONTAINER } from '../install.js';
import { apply, echoNamespace, gateway, gatewayClass, programmedAddress, smallProxies } from '../traffic.js';

const NS = 'access-e2e';
/** The Gateway's name, unique among the suites: its proxy pods live in the controller's namespace. */
const GATEWAY = 'access';
const CLIENT_ID = 'portico-e2e';
const CLIENT_SECRET = randomBytes(24).toString('base64url');
const API_KEY = randomBytes(16).toString('hex');
const PROVIDER_PORT = 9090;
const CREDENTIALS = { 'gateway.portico.io/credentials': 'true' };
let cluster: Cluster;

const ruleTarget = (sectionName: string) => ({
  group: 'gateway.networking.k8s.io',
  kind: 'HTTPRoute',
  name: 'app',
  sectionName,
});

const policy = (name: string, spec: Record<string, unknown>) =>
  apply(cluster, {
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'AccessPolicy',
    metadata: { name, namespace: NS },
    spec,
  } as never);

/** Runs in the file's before(), once Portico is installed: all but what needs the provider's and Gateway's addresses. */
export async function setup(c: Cluster): Promise<void> {
  cluster = c;
  await gatewayClass(cluster, 'portico', DEFAULT_CONTROLLER_NAME);
  await echoNamespace(cluster, NS);
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'oidc', namespace: NS, labels: CREDENTIALS },
    stringData: { 'client-secret': CLIENT_SECRET, 'cookie-secret': randomBytes(32).toString('base64') },
  } as never);
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'keys', namespace: NS, labels: CREDENTIALS },
    stringData: { ci: API_KEY },
  } as never);
  // The provider's address is the pool's, routed from the host and answered by kube-proxy for pods too.
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'openid-provider', namespace: NS },
    spec: {
      type: 'LoadBalancer',
      selector: { app: 'openid-provider' },
      ports: [{ name: 'http', port: 80, targetPort: PROVIDER_PORT }],
    },
  } as never);
  await smallProxies(cluster, NS, 'small');
  await gateway(cluster, NS, GATEWAY, 'portico', [{ name: 'http', port: 80 }], 'small');
  // No hostname: the browser (fetch) cannot set Host, it names the Gateway's address.
  const rule = (name: string, path: string) => ({
    name,
    matches: [{ path: { type: 'PathPrefix', value: path } }],
    backendRefs: [{ name: 'echo', port: 8080 }],
  });
  await apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'app', namespace: NS },
    spec: {
      parentRefs: [{ name: GATEWAY }],
      rules: [rule('web', '/'), rule('api', '/api'), rule('blocked', '/blocked')],
    },
  } as never);
  await policy('api-keys', { targetRefs: [ruleTarget('api')], apiKeys: { secretRefs: [{ name: 'keys' }] } });
  await policy('blocked', {
    targetRefs: [ruleTarget('blocked')],
    rules: [{ name: 'everyone', action: 'Deny', clientCIDRs: ['0.0.0.0/0', '::/0'] }],
    defaultAction: 'Allow',
  });
}

/** The provider's Deployment: its issuer and the client's callback are the two addresses only known now. */
async function startProvider(issuer: string, redirectUri: string): Promise<void> {
  const image = cluster.toolchain.images['openid-provider']?.names[0];
  if (image === undefined)
    throw new Error('no openid-provider image in the toolchain: run `npm run toolchain`');
  const labels = { app: 'openid-provider' };
  const env = { ISSUER: issuer, PORT: String(PROVIDER_PORT), CLIENT_ID, REDIRECT_URI: redirectUri };
  await apply(cluster, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'openid-provider', namespace: NS },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: 'provider',
              image,
              env: [
                ...Object.entries(env).map(([name, value]) => ({ name, value })),
                {
                  name: 'CLIENT_SECRET',
                  valueFrom: { secretKeyRef: { name: 'oidc', key: 'client-secret' } },
                },
              ],
              ports: [{ name: 'http', containerPort: PROVIDER_PORT }],
              readinessProbe: { tcpSocket: { port: PROVIDER_PORT }, periodSeconds: 1 },
              securityContext: RESTRICTED_CONTAINER,
            },
          ],
        },
      },
    },
  } as never);
}

test('AccessPolicy on the cluster: OIDC login at an in-cluster OpenID provider, an API key, a client CIDR deny', {
  skip: E2E_SKIP,
}, async () => {
  const providerAddress = await eventually(async () => {
    const r = await call(cluster, 'GET', `/api/v1/namespaces/${NS}/services/openid-provider`);
    const ip = asList(r.body.status?.loadBalancer?.ingress)[0]?.ip;
    return typeof ip === 'string' ? ip : undefined;
  }, "the provider Service's load balancer address");
  const issuer = `http://${providerAddress}`;
  const address = await programmedAddress(cluster, NS, GATEWAY, 120_000);
  const base = `http://${address}`;
  await startProvider(issuer, `${base}/oauth2/callback`);
  await policy('login', {
    targetRefs: [ruleTarget('web')],
    oidc: {
      issuer,
      clientID: CLIENT_ID,
      clientSecretRef: { name: 'oidc' },
      cookieSecretRef: { name: 'oidc' },
      scopes: ['openid'],
      idTokenHeader: 'x-id-token',
      forwardAccessToken: true,
    },
  });

  // A page load without a session is sent to the provider's authorization endpoint (once the proxy has the
  // policy and the provider serves its discovery document).
  const browser = new Browser();
  const redirect = await eventually(
    async () => {
      const page = await browser.request(`${base}/dashboard`);
      const location = page.headers.get('location') ?? '';
      return page.status === 302 && location.startsWith(`${issuer}/auth?`) ? location : undefined;
    },
    'a redirect to the in-cluster provider',
    60_000,
  );
  assert.equal(new URL(redirect).searchParams.get('client_id'), CLIENT_ID);
  const loginPage = await browser.go(redirect);
  assert.ok(loginPage.url.startsWith(`${issuer}/interaction/`), loginPage.url);
  const consentPage = await browser.submit(loginPage, { login: 'alice', password: 'any' });
  const landed = await browser.submit(consentPage);
  assert.equal(landed.status, 200, landed.body.slice(0, 300));
  assert.equal(landed.url, `${base}/dashboard`);
  const seen = JSON.parse(landed.body) as EchoBody;
  assert.equal(seen.namespace, NS);
  assert.match(seen.headers.Authorization?.[0] ?? '', /^Bearer \S+$/);
  assert.equal(seen.headers['X-Id-Token']?.[0]?.split('.').length, 3, 'the ID token, a JWT');
  assert.ok(browser.cookies(base).has('portico-session'));
  assert.equal(seen.headers.Cookie, undefined, 'the session cookie does not reach the backend');

  // The api rule: an API key from a labelled Secret, taken off before the backend.
  const api = (headers: Record<string, string>) =>
    httpRequest(80, '/api/orders', { address, headers, timeoutMs: 5000 });
  assert.equal((await api({})).status, 401);
  assert.equal((await api({ 'x-api-key': 'not-the-key' })).status, 401);
  const keyed = await api({ 'x-api-key': API_KEY });
  assert.equal(keyed.status, 200);
  assert.equal((JSON.parse(keyed.body) as EchoBody).headers['X-Api-Key'], undefined);
  // The blocked rule: every client address denied, 403.
  assert.equal((await httpRequest(80, '/blocked', { address, timeoutMs: 5000 })).status, 403);

  // Its proxy and the provider go (the Service gives its address back): the suites after this need the node's CPU.
  await call(cluster, 'DELETE', `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/gateways/${GATEWAY}`);
  await call(cluster, 'DELETE', `/apis/apps/v1/namespaces/${NS}/deployments/openid-provider`);
  await call(cluster, 'DELETE', `/api/v1/namespaces/${NS}/services/openid-provider`);
});

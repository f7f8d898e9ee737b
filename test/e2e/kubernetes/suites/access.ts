// AccessPolicy on the real cluster through one small Gateway, in whichever namespace mode the file installed:
// every mechanism guards one named rule of the same route. OIDC login, refresh and logout at a real OpenID
// provider running in the cluster (the toolchain's image of `oidc-provider`, behind a LoadBalancer Service so the
// proxy pod and the test's browser on the host reach it at the same issuer URL), its ID token checked against the
// provider's remote key set until that goes away; an API key and basic auth (bcrypt) from labelled Secrets; a JWT
// from a Secret's key set refused in every forged form; authorization services over HTTP and gRPC (ext_authz v3),
// one that hangs failing closed; a client CIDR deny; a policy at every attachment level (the nearest decides); and
// policy edits under traffic that drop no request.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import bcrypt from 'bcryptjs';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually } from '../../../cluster/kube-api.js';
import { Browser } from '../../../support/browser.js';
import { type EchoBody, httpRequest } from '../../../support/http.js';
import { AUTHORIZER_PORT, authorizer, GRPC_AUTHORIZER_PORT, grpcAuthorizer } from '../authorizer.js';
import { assertNoFailedRequests, duringTraffic } from '../handover.js';
import { E2E_SKIP } from '../install.js';
import {
  apply,
  echoNamespace,
  gateway,
  gatewayClass,
  podDeployment,
  programmedAddress,
  smallProxies,
} from '../traffic.js';

/** The Gateway's name, unique among the suites: in Controller Namespace Mode its pods share the controller's. */
const GATEWAY = 'access';
const CLIENT_ID = 'portico-e2e';
const CLIENT_SECRET = randomBytes(24).toString('base64url');
const API_KEY = randomBytes(16).toString('hex');
const PASSWORD = randomBytes(12).toString('base64url');
const PROVIDER_PORT = 9090;
/** The Gateway's second listener, which has no policy of its own (its Gateway's applies). */
const ALT_PORT = 8080;
/** Short, so the proxy refreshes a session's tokens within the test. */
const ACCESS_TOKEN_SECONDS = 4;
const CORP = 'https://corp.example';
const CREDENTIALS = { 'gateway.portico.io/credentials': 'true' };
const corpKeys = generateKeyPair('ES256', { extractable: true });
let cluster: Cluster;
/** The suite's namespace, one per mode (each file installs Portico its own way). */
let ns: string;

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
    metadata: { name, namespace: ns },
    spec,
  } as never);

const secret = (name: string, stringData: Record<string, string>) =>
  apply(cluster, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: ns, labels: CREDENTIALS },
    stringData,
  } as never);

/** Runs in the file's before(), once Portico is installed in `system`: all but what needs the provider's address. */
export async function setup(c: Cluster, system: string): Promise<void> {
  cluster = c;
  ns = `access-${system.replace(/^portico-/, '')}`;
  await gatewayClass(cluster, 'portico', DEFAULT_CONTROLLER_NAME);
  await echoNamespace(cluster, ns);
  await authorizer(cluster, ns, 'authz');
  await grpcAuthorizer(cluster, ns, 'grpc-authz');
  await secret('oidc', {
    'client-secret': CLIENT_SECRET,
    'cookie-secret': randomBytes(32).toString('base64'),
  });
  await secret('keys', { ci: API_KEY });
  await secret('users', { '.htpasswd': `demo:${bcrypt.hashSync(PASSWORD, 6)}\n` });
  const jwk = { ...(await exportJWK((await corpKeys).publicKey)), kid: 'corp-1', alg: 'ES256' };
  await secret('jwks', { 'jwks.json': JSON.stringify({ keys: [jwk] }) });
  // The provider's address is the pool's, routed from the host and answered by kube-proxy for pods too.
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'openid-provider', namespace: ns },
    spec: {
      type: 'LoadBalancer',
      selector: { app: 'openid-provider' },
      ports: [{ name: 'http', port: 80, targetPort: PROVIDER_PORT }],
    },
  } as never);
  await smallProxies(cluster, ns, 'small');
  const listeners = [
    { name: 'http', port: 80 },
    { name: 'alt', port: ALT_PORT },
  ];
  await gateway(cluster, ns, GATEWAY, 'portico', listeners, 'small');
  // No hostname: the browser (fetch) cannot set Host, it names the Gateway's address.
  const rule = (name: string, path: string) => ({
    name,
    matches: [{ path: { type: 'PathPrefix', value: path } }],
    backendRefs: [{ name: 'echo', port: 8080 }],
  });
  const rules = ['api', 'basic', 'jwt', 'id-token', 'ext', 'ext-grpc', 'blocked', 'traffic'];
  await apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'app', namespace: ns },
    spec: {
      parentRefs: [{ name: GATEWAY }],
      rules: [rule('web', '/'), ...rules.map((r) => rule(r, `/${r}`))],
    },
  } as never);
  await policy('api-keys', { targetRefs: [ruleTarget('api')], apiKeys: { secretRefs: [{ name: 'keys' }] } });
  await policy('basic', { targetRefs: [ruleTarget('basic')], basicAuth: { secretRef: { name: 'users' } } });
  await policy('jwt', {
    targetRefs: [ruleTarget('jwt')],
    jwt: {
      providers: [
        {
          name: 'corp',
          issuer: CORP,
          audiences: ['api'],
          jwks: { secretRef: { name: 'jwks' } },
          claimToHeaders: [{ claim: 'sub', header: 'x-user' }],
        },
      ],
    },
  });
  await policy('ext', {
    targetRefs: [ruleTarget('ext')],
    externalAuth: {
      protocol: 'HTTP',
      backendRef: { name: 'authz', port: AUTHORIZER_PORT },
      http: { allowedResponseHeaders: ['x-user'] },
      timeout: '1s',
    },
  });
  await policy('ext-grpc', {
    targetRefs: [ruleTarget('ext-grpc')],
    externalAuth: {
      protocol: 'GRPC',
      backendRef: { name: 'grpc-authz', port: GRPC_AUTHORIZER_PORT },
      grpc: { allowedHeaders: ['authorization'] },
    },
  });
  await policy('blocked', {
    targetRefs: [ruleTarget('blocked')],
    rules: [{ name: 'everyone', action: 'Deny', clientCIDRs: ['0.0.0.0/0', '::/0'] }],
    defaultAction: 'Allow',
  });
  await policy('traffic', trafficPolicy(0));
  await layeredPolicies();
}

/**
 * A policy at each attachment level, each denying its own `x-deny` value: the Gateway's, the http listener's, the
 * route `layers`'s and its rule `own`'s; the route `bare` has none. The nearest one decides, whole.
 */
async function layeredPolicies(): Promise<void> {
  const route = (name: string, paths: Record<string, string>) =>
    apply(cluster, {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name, namespace: ns },
      spec: {
        parentRefs: [{ name: GATEWAY }],
        rules: Object.entries(paths).map(([rule, path]) => ({
          name: rule,
          matches: [{ path: { type: 'PathPrefix', value: path } }],
          backendRefs: [{ name: 'echo', port: 8080 }],
        })),
      },
    } as never);
  await route('layers', { own: '/layers/own', inherits: '/layers/inherits' });
  await route('bare', { all: '/bare' });
  const deny = (level: string) => ({
    rules: [{ name: level, action: 'Deny', headers: [{ name: 'x-deny', value: level }] }],
    defaultAction: 'Allow',
  });
  const gatewayTarget = { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: GATEWAY };
  const routeTarget = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'layers' };
  await policy('layer-gateway', { targetRefs: [gatewayTarget], ...deny('gateway') });
  await policy('layer-listener', {
    targetRefs: [{ ...gatewayTarget, sectionName: 'http' }],
    ...deny('listener'),
  });
  await policy('layer-route', { targetRefs: [routeTarget], ...deny('route') });
  await policy('layer-rule', { targetRefs: [{ ...routeTarget, sectionName: 'own' }], ...deny('rule') });
}

/** The traffic rule's policy at edit `n`: it denies requests with `x-edit: <n>`, and lets the test's traffic by. */
function trafficPolicy(n: number): Record<string, unknown> {
  return {
    targetRefs: [ruleTarget('traffic')],
    rules: [
      { name: `edit-${n}`, action: 'Deny', headers: [{ name: 'x-edit', value: String(n) }] },
      { name: 'documentation-net', action: 'Deny', clientCIDRs: ['192.0.2.0/24'] },
    ],
    defaultAction: 'Allow',
  };
}

/** The provider's Deployment: its issuer and the client's callback are the two addresses only known now. */
async function startProvider(issuer: string, redirectUri: string): Promise<void> {
  const image = cluster.toolchain.images['openid-provider']?.names[0];
  if (image === undefined)
    throw new Error('no openid-provider image in the toolchain: run `npm run toolchain`');
  const env = {
    ISSUER: issuer,
    PORT: String(PROVIDER_PORT),
    CLIENT_ID,
    REDIRECT_URI: redirectUri,
    ACCESS_TOKEN_TTL: String(ACCESS_TOKEN_SECONDS),
  };
  const provider = {
    name: 'provider',
    image,
    env: [
      ...Object.entries(env).map(([name, value]) => ({ name, value })),
      { name: 'CLIENT_SECRET', valueFrom: { secretKeyRef: { name: 'oidc', key: 'client-secret' } } },
    ],
  };
  await podDeployment(cluster, ns, 'openid-provider', provider, PROVIDER_PORT);
}

type Headers = Record<string, string>;

function request(address: string, path: string, headers: Headers = {}, port = 80) {
  return httpRequest(port, path, { address, headers, timeoutMs: 10_000 });
}

const bearer = (token: string): Headers => ({ authorization: `Bearer ${token}` });

test('AccessPolicy on the cluster: OIDC login, refresh and logout at an in-cluster provider; its ID token checked against its key set, refused once that is gone', {
  skip: E2E_SKIP,
}, async () => {
  const providerAddress = await eventually(async () => {
    const r = await call(cluster, 'GET', `/api/v1/namespaces/${ns}/services/openid-provider`);
    const ip = asList(r.body.status?.loadBalancer?.ingress)[0]?.ip;
    return typeof ip === 'string' ? ip : undefined;
  }, "the provider Service's load balancer address");
  const issuer = `http://${providerAddress}`;
  const address = await programmedAddress(cluster, ns, GATEWAY, 120_000);
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
  // The provider's own keys, fetched by the proxies, cached for a second only: its outage shows soon.
  await policy('id-token', {
    targetRefs: [ruleTarget('id-token')],
    jwt: {
      providers: [
        {
          name: 'provider',
          issuer,
          audiences: [CLIENT_ID],
          jwks: { remote: { url: `${issuer}/jwks`, cacheDurationSeconds: 1 } },
          claimToHeaders: [{ claim: 'sub', header: 'x-user' }],
        },
      ],
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
  assert.equal(seen.namespace, ns);
  const firstToken = seen.headers.Authorization?.[0] ?? '';
  assert.match(firstToken, /^Bearer \S+$/);
  const idToken = seen.headers['X-Id-Token']?.[0] ?? '';
  assert.equal(idToken.split('.').length, 3, 'the ID token, a JWT');
  assert.ok(browser.cookies(base).has('portico-session'));
  assert.equal(seen.headers.Cookie, undefined, 'the session cookie does not reach the backend');

  // The access token lives ACCESS_TOKEN_SECONDS: past it, the proxy refreshes it; the browser never logs in again.
  // Each page load must pass (a failed refresh would send it to log in): not an eventually, which would retry.
  const deadline = Date.now() + 60_000;
  let renewed: string | undefined;
  while (renewed === undefined) {
    assert.ok(Date.now() < deadline, 'no refreshed access token within 60 s');
    const page = await browser.request(`${base}/dashboard`);
    assert.equal(page.status, 200, 'the session holds across the refresh');
    const token = (JSON.parse(page.body) as EchoBody).headers.Authorization?.[0];
    if (token !== firstToken) renewed = token;
    else await new Promise((r) => setTimeout(r, 500));
  }
  assert.match(renewed, /^Bearer \S+$/);

  // The ID token as a bearer JWT: verified with the provider's key set, which the proxy fetches from it.
  const withIdToken = await eventually(async () => {
    const r = await request(address, '/id-token', bearer(idToken));
    return r.status === 200 ? r : undefined;
  }, "the ID token accepted with the provider's remote keys");
  assert.deepEqual((JSON.parse(withIdToken.body) as EchoBody).headers['X-User'], ['alice']);

  // Logout clears the session and sends the browser to the provider; the next page load must log in again.
  const logout = await browser.request(`${base}/logout`);
  assert.equal(logout.status, 302);
  assert.equal(new URL(logout.headers.get('location') ?? '').origin, issuer);
  assert.ok(!browser.cookies(base).has('portico-session'), 'the session cookie is cleared');
  assert.equal((await browser.request(`${base}/dashboard`)).status, 302, 'without a session: sent to log in');

  // The provider goes (its Service, with no endpoint left, refuses connections): once the cached key set is past
  // its second, no key verifies the same ID token (no stale or default key), and the route fails closed.
  await call(cluster, 'DELETE', `/apis/apps/v1/namespaces/${ns}/deployments/openid-provider`);
  await eventually(
    async () => ((await request(address, '/id-token', bearer(idToken))).status === 401 ? true : undefined),
    'the ID token refused without its key set',
    60_000,
  );
  await call(cluster, 'DELETE', `/api/v1/namespaces/${ns}/services/openid-provider`);
});

test('AccessPolicy on the cluster: an API key, basic auth, a JWT refused in every forged form, authorization services over HTTP and gRPC (one that hangs fails closed), a CIDR deny', {
  skip: E2E_SKIP,
}, async () => {
  const address = await programmedAddress(cluster, ns, GATEWAY, 120_000);
  const get = (path: string, headers?: Headers) => request(address, path, headers);

  // An API key from a labelled Secret, taken off before the backend.
  await eventually(
    async () => ((await get('/api')).status === 401 ? true : undefined),
    'the api rule guarded',
  );
  assert.equal((await get('/api', { 'x-api-key': 'not-the-key' })).status, 401);
  const keyed = await get('/api', { 'x-api-key': API_KEY });
  assert.equal(keyed.status, 200);
  assert.equal((JSON.parse(keyed.body) as EchoBody).headers['X-Api-Key'], undefined);

  // Basic auth from a bcrypt htpasswd line; the credential does not reach the backend.
  const basic = (password: string) => ({
    authorization: `Basic ${Buffer.from(`demo:${password}`).toString('base64')}`,
  });
  assert.equal((await get('/basic')).status, 401);
  assert.equal((await get('/basic', basic('wrong'))).status, 401);
  const user = await get('/basic', basic(PASSWORD));
  assert.equal(user.status, 200);
  assert.equal((JSON.parse(user.body) as EchoBody).headers.Authorization, undefined);

  // A JWT of the Secret's key set: the valid one passes with its claim as a header; every forgery is a bare 401.
  const corp = await corpKeys;
  const forger = await generateKeyPair('ES256');
  const now = Math.floor(Date.now() / 1000);
  // `claims` replace the valid token's (its exp, nbf, aud or sub).
  const token = (key: Parameters<SignJWT['sign']>[0], claims: Record<string, unknown> = {}, header = {}) =>
    new SignJWT({ sub: 'alice', iss: CORP, aud: 'api', iat: now, exp: now + 600, ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: 'corp-1', ...header })
      .sign(key);
  const valid = await get('/jwt', { ...bearer(await token(corp.privateKey)), 'x-user': 'mallory' });
  assert.equal(valid.status, 200);
  assert.deepEqual(
    (JSON.parse(valid.body) as EchoBody).headers['X-User'],
    ['alice'],
    "the client's own is replaced",
  );
  const pem = new TextEncoder().encode(await exportSPKI(corp.publicKey));
  const forgeries: [string, string][] = [
    ['no token', ''],
    [
      'alg none',
      new UnsecuredJWT({ sub: 'alice' }).setIssuer(CORP).setAudience('api').setExpirationTime('5m').encode(),
    ],
    ['HS256 with the public key as its secret', await token(pem, {}, { alg: 'HS256' })],
    ['a forged key under the known kid', await token(forger.privateKey)],
    ['a forged key under a new kid', await token(forger.privateKey, {}, { kid: 'rotated-maybe' })],
    ['expired', await token(corp.privateKey, { exp: now - 3600 })],
    ['not yet valid', await token(corp.privateKey, { nbf: now + 3600 })],
    ['another audience', await token(corp.privateKey, { aud: 'other' })],
    ['oversized', await token(corp.privateKey, { pad: 'x'.repeat(9000) })],
    ['header injection through a claim', await token(corp.privateKey, { sub: 'a\r\nx-admin: true' })],
  ];
  for (const [what, forged] of forgeries) {
    const r = await get('/jwt', forged === '' ? {} : bearer(forged));
    assert.equal(r.status, 401, what);
    assert.equal(r.body, '', `${what}: no detail`);
  }

  // The HTTP authorization service decides, its user header reaching the backend; one that hangs is given up
  // after the policy's timeout and refused (fail closed by default).
  await eventually(
    async () => ((await get('/ext', bearer('good'))).status === 200 ? true : undefined),
    'the HTTP authorization service letting a good token by',
  );
  assert.deepEqual((JSON.parse((await get('/ext', bearer('good'))).body) as EchoBody).headers['X-User'], [
    'good',
  ]);
  const refused = await get('/ext', bearer('bad'));
  assert.equal(refused.status, 401, "the service's answer goes to the client");
  assert.equal(refused.headers['www-authenticate'], 'Bearer');
  assert.equal((await get('/ext', bearer('hang'))).status, 403, 'a service that hangs fails closed');

  // The gRPC one (Envoy ext_authz v3) adds its header and removes the credential; its denial answers the client.
  const granted = await eventually(async () => {
    const r = await get('/ext-grpc', bearer('good'));
    return r.status === 200 ? r : undefined;
  }, 'the gRPC authorization service letting a good token by');
  const grantedSeen = JSON.parse(granted.body) as EchoBody;
  assert.deepEqual(grantedSeen.headers['X-User'], ['grpc-good']);
  assert.equal(grantedSeen.headers.Authorization, undefined);
  const denied = await get('/ext-grpc', bearer('bad'));
  assert.equal(denied.status, 403);
  assert.equal(denied.body, 'denied by policy');

  // Every client address denied, 403 with no detail.
  const blocked = await get('/blocked');
  assert.equal(blocked.status, 403);
  assert.equal(blocked.body, '');
});

test('AccessPolicy on the cluster: a rule over its route, a route over its listener, a listener over its Gateway', {
  skip: E2E_SKIP,
}, async () => {
  const address = await programmedAddress(cluster, ns, GATEWAY, 120_000);
  /** The status of a request to `path` on `port` carrying `x-deny: <level>`. */
  const status = async (port: number, path: string, level: string) =>
    (await request(address, path, { 'x-deny': level }, port)).status;
  // Each level's policy in force (its own refusal seen) before the strict checks below.
  const inForce: [number, string, string][] = [
    [80, '/layers/own', 'rule'],
    [ALT_PORT, '/layers/inherits', 'route'],
    [80, '/bare', 'listener'],
    [ALT_PORT, '/bare', 'gateway'],
  ];
  for (const [port, path, level] of inForce)
    await eventually(
      async () => ((await status(port, path, level)) === 403 ? true : undefined),
      `the ${level} policy in force on ${port}`,
      60_000,
    );
  // The rule with its own policy: only that one counts, on either listener.
  for (const port of [80, ALT_PORT]) {
    assert.equal(await status(port, '/layers/own', 'rule'), 403);
    for (const level of ['route', 'listener', 'gateway'])
      assert.equal(await status(port, '/layers/own', level), 200, `${level} on ${port}`);
  }
  // The other rule: its route's policy, over both the listener's and the Gateway's.
  for (const port of [80, ALT_PORT]) {
    assert.equal(await status(port, '/layers/inherits', 'route'), 403);
    for (const level of ['rule', 'listener', 'gateway'])
      assert.equal(await status(port, '/layers/inherits', level), 200, `${level} on ${port}`);
  }
  // The route `bare` has no policy: the http listener's decides there, the Gateway's on the other listener.
  assert.equal(await status(80, '/bare', 'listener'), 403);
  assert.equal(await status(80, '/bare', 'gateway'), 200);
  assert.equal(await status(ALT_PORT, '/bare', 'gateway'), 403);
  assert.equal(await status(ALT_PORT, '/bare', 'listener'), 200);
});

test('AccessPolicy on the cluster: policy edits under traffic apply without dropping a request', {
  skip: E2E_SKIP,
}, async (t) => {
  const address = await programmedAddress(cluster, ns, GATEWAY, 120_000);
  const edited = (n: number) =>
    eventually(
      async () =>
        (await request(address, '/traffic', { 'x-edit': String(n) })).status === 403 ? true : undefined,
      `edit ${n} applied`,
      60_000,
    );
  await edited(0);
  const result = await duringTraffic([{ address, port: 80, host: 'traffic.example.com' }], async () => {
    for (let n = 1; n <= 3; n++) {
      await policy('traffic', trafficPolicy(n));
      await edited(n);
      assert.equal((await request(address, '/traffic', { 'x-edit': String(n - 1) })).status, 200);
    }
  });
  assertNoFailedRequests(t, result);

  // Its proxy goes: the suites after this need the node's CPU.
  await call(cluster, 'DELETE', `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/gateways/${GATEWAY}`);
});

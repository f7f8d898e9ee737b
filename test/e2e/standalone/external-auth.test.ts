// The ExternalAuth HTTPRoute filter (Gateway API v1.7 experimental) through the real proxy from YAML files: an HTTP
// forward-auth service and an Envoy ext_authz gRPC service, run by the test on loopback, decide each request;
// refusals reach the client as the service sent them, a service that hangs fails closed, a body goes along up to
// its bound, and an edit of the filter applies while requests keep flowing, none dropped.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { PORTS } from '../../../src/ir/well-known.js';
import { startExtAuthz } from '../../support/ext-authz.js';
import { closeServer, type EchoBody, httpRequest, listen } from '../../support/http.js';
import { parsePrometheus } from '../../support/prometheus.js';
import { eventually, exampleCopy, localServiceYaml, programmedAddress, startStandalone } from './harness.js';

function routes(httpPort: number, grpcPort: number, allowedResponse: string): string {
  const endpoints = (name: string, port: number) => `---\n${localServiceYaml(name, 9000, port)}`;
  return `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: guarded, namespace: default}
spec:
  parentRefs: [{name: eg}]
  hostnames: [guarded.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /grpc}}]
    filters:
    - type: ExternalAuth
      externalAuth:
        protocol: GRPC
        backendRef: {name: authz, port: 9000}
        grpc: {allowedHeaders: [authorization]}
    backendRefs: [{name: backend-web, port: 3000}]
  - matches: [{path: {type: PathPrefix, value: /upload}}]
    filters:
    - type: ExternalAuth
      externalAuth:
        protocol: HTTP
        backendRef: {name: auth, port: 9000}
        http: {}
        forwardBody: {maxSize: 16}
    backendRefs: [{name: backend-web, port: 3000}]
  - filters:
    - type: ExternalAuth
      externalAuth:
        protocol: HTTP
        backendRef: {name: auth, port: 9000}
        http: {path: /verify, allowedResponseHeaders: [${allowedResponse}]}
    backendRefs: [{name: backend-web, port: 3000}]
${endpoints('auth', httpPort)}${endpoints('authz', grpcPort)}`;
}

/** A forward-auth service: `Bearer good` passes (naming the user), `/hang` never answers, anything else is a 401. */
async function startForwardAuth(t: { after(fn: () => Promise<void>): void }) {
  const seen: { url: string; body: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ url: req.url ?? '', body: Buffer.concat(chunks).toString() });
      if ((req.url ?? '').includes('/hang')) return;
      if (req.headers.authorization === 'Bearer good') {
        res.writeHead(200, { 'x-auth-user': 'alice', 'x-auth-group': 'ops' });
        res.end();
      } else {
        res.writeHead(401, { 'www-authenticate': 'Bearer realm="guarded"', 'content-type': 'text/plain' });
        res.end('no entry');
      }
    });
  });
  const port = await listen(server);
  t.after(() => closeServer(server));
  return { port, seen };
}

test('ExternalAuth filter: forward-auth and ext_authz decide, refusals pass on, a hang fails closed, edits drop nothing', async (t) => {
  const auth = await startForwardAuth(t);
  const grpcPort = await startExtAuthz(t);
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  const file = join(files, 'guarded.yaml');
  await writeFile(file, routes(auth.port, grpcPort, 'x-auth-user'));
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.91.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const get = (
    path: string,
    headers: Record<string, string> = {},
    extra: { method?: string; body?: string } = {},
  ) =>
    httpRequest(8080, path, { address, host: 'guarded.example.com', headers, timeoutMs: 10_000, ...extra });

  const passed = await eventually('a request the service lets pass', async () => {
    const r = await get('/page?x=1', { authorization: 'Bearer good', 'x-auth-user': 'mallory' }).catch(
      () => undefined,
    );
    return r?.status === 200 ? r : undefined;
  });
  const seen = JSON.parse(passed.body) as EchoBody;
  // The service's answer replaced what the client claimed; headers it was not allowed to set stay out.
  assert.deepEqual(seen.headers['X-Auth-User'], ['alice']);
  assert.equal(seen.headers['X-Auth-Group'], undefined);
  assert.ok(auth.seen.some((s) => s.url === '/verify/page?x=1'));

  const refused = await get('/page');
  assert.equal(refused.status, 401);
  assert.equal(refused.body, 'no entry');
  assert.equal(refused.headers['www-authenticate'], 'Bearer realm="guarded"');

  const granted = await get('/grpc/x', { authorization: 'Bearer good' });
  assert.equal(granted.status, 200);
  const grpcSeen = JSON.parse(granted.body) as EchoBody;
  assert.deepEqual(grpcSeen.headers['X-Authz'], ['granted']);
  assert.equal(grpcSeen.headers.Authorization, undefined, 'the service removed the credential');
  const denied = await get('/grpc/x', { authorization: 'Bearer bad' });
  assert.deepEqual([denied.status, denied.body], [403, 'denied by policy']);

  // The body goes to the service (and then to the backend) up to its bound; a larger one is refused.
  const upload = await get(
    '/upload',
    { authorization: 'Bearer good', 'content-type': 'text/plain' },
    { method: 'POST', body: 'small body' },
  );
  assert.equal(upload.status, 200);
  assert.equal(auth.seen.at(-1)?.body, 'small body');
  const large = await get(
    '/upload',
    { authorization: 'Bearer good' },
    { method: 'POST', body: 'x'.repeat(64) },
  );
  assert.equal(large.status, 413);

  // A service that never answers: after the filter's timeout the request is refused, never let through.
  const hung = await get('/hang', { authorization: 'Bearer good' });
  assert.equal(hung.status, 403);

  // Every decision is counted, by the filter's policy name, the mechanism and the outcome.
  const metrics = parsePrometheus(await (await fetch(`http://${address}:${PORTS.metrics}/metrics`)).text());
  const count = (policy: string, rule: string, outcome: string) =>
    metrics.find(
      (m) =>
        m.name === 'portico_proxy_auth_decisions_total' &&
        m.labels.policy === `ExternalAuth ${policy}` &&
        m.labels.rule === rule &&
        m.labels.outcome === outcome,
    )?.value;
  // The refused /page and the hung /hang.
  assert.equal(count('default/guarded/rule/2/match/0', 'ext_authz_http', 'denied'), 2);
  assert.equal(count('default/guarded/rule/0/match/0', 'ext_authz_grpc', 'denied'), 1);
  assert.equal(count('default/guarded/rule/0/match/0', 'ext_authz_grpc', 'allowed'), 1);

  // An edit of the filter while requests flow: every one is answered by the old or the new configuration.
  const statuses: number[] = [];
  let editing = true;
  const load = (async () => {
    while (editing) statuses.push((await get('/page', { authorization: 'Bearer good' })).status);
  })();
  await writeFile(file, routes(auth.port, grpcPort, 'x-auth-group'));
  await eventually('the edited filter applied', async () => {
    const r = await get('/page', { authorization: 'Bearer good' });
    const headers = (JSON.parse(r.body) as EchoBody).headers;
    return headers['X-Auth-Group']?.[0] === 'ops' ? true : undefined;
  });
  editing = false;
  await load;
  assert.ok(statuses.length > 0);
  assert.deepEqual([...new Set(statuses)], [200]);
});

test('AccessPolicy externalAuth: its service decides; one that hangs fails open or closed as the policy says', async (t) => {
  const auth = await startForwardAuth(t);
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  const policy = (name: string, route: string, failOpen: boolean) => `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ${route}, namespace: default}
spec:
  parentRefs: [{name: eg}]
  hostnames: [${route}.example.com]
  rules: [{backendRefs: [{name: backend-web, port: 3000}]}]
---
apiVersion: gateway.portico.io/v1alpha1
kind: AccessPolicy
metadata: {name: ${name}, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: ${route}}]
  externalAuth:
    protocol: HTTP
    backendRef: {name: auth, port: 9000}
    http: {allowedResponseHeaders: [x-auth-user]}
    timeout: 300ms
    failOpen: ${failOpen}
`;
  await writeFile(
    join(files, 'policies.yaml'),
    `${localServiceYaml('auth', 9000, auth.port)}${policy('open', 'lenient', true)}${policy('closed', 'strict', false)}`,
  );
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.93.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const get = (host: string, path: string, headers: Record<string, string> = {}) =>
    httpRequest(8080, path, { address, host: `${host}.example.com`, headers, timeoutMs: 10_000 });

  const passed = await eventually('the policy applied', async () => {
    const r = await get('strict', '/', { authorization: 'Bearer good' }).catch(() => undefined);
    return r?.status === 200 ? r : undefined;
  });
  assert.deepEqual((JSON.parse(passed.body) as EchoBody).headers['X-Auth-User'], ['alice']);
  const refused = await get('strict', '/');
  assert.deepEqual([refused.status, refused.body], [401, 'no entry']);
  // The service hangs on /hang: the lenient policy lets the request pass, the strict one refuses it.
  assert.equal((await get('lenient', '/hang', { authorization: 'Bearer good' })).status, 200);
  assert.equal((await get('strict', '/hang', { authorization: 'Bearer good' })).status, 403);
});

// GatewayListenerFilters (Gateway API v1.7 experimental, GEP-5224) through the real proxy from YAML files: two
// HTTP forward-auth services on loopback are the listener's filters.requests, in order. A refusal answers before
// any route; a header the services set is what route matching sees (a route matches it); the second service sees
// what the first set (the order is kept); an HTTP/2 client gets the same. Host is never changed by a filter. An
// Envoy ext_authz gRPC service as a listener filter decides the same way.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import http2 from 'node:http2';
import { join } from 'node:path';
import { test } from 'node:test';
import { startExtAuthz } from '../../support/ext-authz.js';
import { closeServer, type EchoBody, httpRequest, listen } from '../../support/http.js';
import {
  eventually,
  exampleCopy,
  localServiceYaml,
  PORTICO_CLASS_YAML,
  programmedAddress,
  startStandalone,
} from './harness.js';

function config(firstPort: number, secondPort: number): string {
  const service = (name: string, port: number) => `---\n${localServiceYaml(name, 9000, port)}`;
  return `${PORTICO_CLASS_YAML}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: eg, namespace: default}
spec:
  gatewayClassName: portico
  listeners:
  - name: http
    protocol: HTTP
    port: 8080
    filters:
      requests:
      - type: ExternalAuth
        externalAuth: {protocol: HTTP, backendRef: {name: first-auth, port: 9000}, http: {}}
      - type: ExternalAuth
        externalAuth: {protocol: HTTP, backendRef: {name: second-auth, port: 9000}, http: {allowedHeaders: [x-tier]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: tiers, namespace: default}
spec:
  parentRefs: [{name: eg}]
  hostnames: [lf.example.com]
  rules:
  - matches: [{headers: [{name: x-tier, value: gold}]}]
    backendRefs: [{name: backend-api, port: 3000}]
  - backendRefs: [{name: backend-web, port: 3000}]
${service('first-auth', firstPort)}${service('second-auth', secondPort)}`;
}

/** An HTTP forward-auth service; `decide` gives the status and the headers of its answer. */
async function startAuth(
  t: { after(fn: () => Promise<void>): void },
  decide: (headers: Record<string, string | string[] | undefined>) => [number, Record<string, string>],
) {
  const seen: Record<string, string | string[] | undefined>[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    const [status, headers] = decide(req.headers);
    res.writeHead(status, headers);
    res.end(status === 200 ? '' : 'no entry');
  });
  const port = await listen(server);
  t.after(() => closeServer(server));
  return { port, seen };
}

test('listener filters: refused before routing, auth headers routed on, order kept, HTTP/1.1 and HTTP/2', async (t) => {
  // The first names the tier of a good token (and tries to move the request to another host); the second
  // promotes silver to gold: only in this order does the gold route get the request.
  const first = await startAuth(t, (h) =>
    h.authorization === 'Bearer good'
      ? [200, { 'x-tier': 'silver', host: 'evil.example.com' }]
      : [401, { 'www-authenticate': 'Bearer' }],
  );
  const second = await startAuth(t, (h): [number, Record<string, string>] => [
    200,
    h['x-tier'] === 'silver' ? { 'x-tier': 'gold' } : {},
  ]);
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  await writeFile(join(files, 'gateway.yaml'), config(first.port, second.port));
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.92.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const get = (headers: Record<string, string>) =>
    httpRequest(8080, '/page', { address, host: 'lf.example.com', headers, timeoutMs: 10_000 });

  const passed = await eventually('a request both services let pass', async () => {
    const r = await get({ authorization: 'Bearer good' }).catch(() => undefined);
    return r?.status === 200 ? r : undefined;
  });
  const seen = JSON.parse(passed.body) as EchoBody;
  assert.deepEqual(seen.headers['X-Tier'], ['gold'], JSON.stringify(seen.headers));
  assert.equal(seen.service, 'api', 'the route matching x-tier: gold was chosen');
  assert.deepEqual(seen.headers['X-Tier'], ['gold']);
  assert.equal(seen.host, 'lf.example.com', 'a filter never changes Host');
  assert.equal(second.seen.at(-1)?.['x-tier'], 'silver', 'the second filter ran after the first');

  // A client that claims gold itself is routed on what the services say, not on its claim.
  const secondCalls = second.seen.length;
  const refused = await get({ 'x-tier': 'gold' });
  assert.equal(refused.status, 401);
  assert.equal(refused.body, 'no entry');
  assert.equal(second.seen.length, secondCalls, 'a refusal stops the filters after it');

  const session = http2.connect(`http://${address}:8080`);
  t.after(() => session.close());
  const h2 = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const stream = session.request({
      ':path': '/page',
      ':authority': 'lf.example.com',
      authorization: 'Bearer good',
    });
    let status = 0;
    let body = '';
    stream.on('response', (h) => {
      status = Number(h[':status']);
    });
    stream.setEncoding('utf8');
    stream.on('data', (d: string) => {
      body += d;
    });
    stream.on('end', () => resolve({ status, body }));
    stream.on('error', reject);
  });
  assert.equal(h2.status, 200);
  assert.equal((JSON.parse(h2.body) as EchoBody).service, 'api');
});

test('a gRPC ext_authz listener filter decides before routing: its headers reach the backend, its refusal the client', async (t) => {
  const authz = await startExtAuthz(t);
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web']);
  await writeFile(
    join(files, 'gateway.yaml'),
    `${PORTICO_CLASS_YAML}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: eg, namespace: default}
spec:
  gatewayClassName: portico
  listeners:
  - name: http
    protocol: HTTP
    port: 8080
    filters:
      requests:
      - type: ExternalAuth
        externalAuth: {protocol: GRPC, backendRef: {name: authz, port: 9001}, grpc: {allowedHeaders: [authorization]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: default}
spec:
  parentRefs: [{name: eg}]
  hostnames: [lf.example.com]
  rules: [{backendRefs: [{name: backend-web, port: 3000}]}]
---
${localServiceYaml('authz', 9001, authz, 'grpc')}`,
  );
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.94.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const get = (headers: Record<string, string>) =>
    httpRequest(8080, '/', { address, host: 'lf.example.com', headers, timeoutMs: 10_000 });
  const granted = await eventually('a request the service grants', async () => {
    const r = await get({ authorization: 'Bearer good' }).catch(() => undefined);
    return r?.status === 200 ? r : undefined;
  });
  const seen = JSON.parse(granted.body) as EchoBody;
  assert.deepEqual(seen.headers['X-Authz'], ['granted']);
  assert.equal(seen.headers.Authorization, undefined, 'the service removed the credential');
  const denied = await get({ authorization: 'Bearer bad' });
  assert.equal(denied.status, 403);
  assert.equal(denied.body, 'denied by policy');
});

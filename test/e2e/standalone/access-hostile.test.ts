// Hostile clients against the access checks of a real proxy: a flood of forged, malformed and oversized JWTs
// over HTTP/1.1 and HTTP/2 at once (every one refused, none a server error, the proxy never restarted), and
// HTTP/2 streams reset while their forward-auth call is still out (each call given up, nothing left pending).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { Agent, createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { exportJWK, generateKeyPair, type JWK, SignJWT, UnsecuredJWT } from 'jose';
import { freePort, httpRequest } from '../../support/http.js';
import {
  adminGet,
  eventually,
  exampleCopy,
  programmedAddress,
  startStandalone,
  untilStatus,
} from './harness.js';

interface FleetProcessView {
  fleet: string;
  process?: { pid?: number; restarts: number };
}

async function proxyProcess(admin: string): Promise<{ pid?: number; restarts: number }> {
  const fleets = (await adminGet<{ items: FleetProcessView[] }>(admin, '/api/fleets')).items;
  const process = fleets.find((f) => f.fleet === 'default/eg')?.process;
  assert.ok(process !== undefined, 'the fleet has a proxy process');
  return process;
}

function jwtPolicy(keys: JWK[]): string {
  return `apiVersion: v1
kind: Secret
metadata: {name: corp-jwks, namespace: default}
stringData:
  jwks.json: '${JSON.stringify({ keys })}'
---
apiVersion: gateway.portico.io/v1alpha1
kind: AccessPolicy
metadata: {name: jwt, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: www}]
  jwt:
    providers:
    - {name: corp, issuer: https://corp.example, audiences: [api], jwks: {secretRef: {name: corp-jwks}}}
    tokenSources:
    - {type: Header, name: authorization, prefix: "Bearer "}
    - {type: QueryParameter, name: access_token}
  defaultAction: Allow
`;
}

/** Tokens an attacker sends: each must be refused with 401 (or 431 for a head too large), never a 5xx. */
async function hostileTokens(valid: string, forgerKey: Parameters<SignJWT['sign']>[0]): Promise<string[]> {
  const [head, body] = valid.split('.');
  const forged = await new SignJWT({ sub: 'mallory' })
    .setProtectedHeader({ alg: 'RS256', kid: 'corp-1' })
    .setIssuer('https://corp.example')
    .setAudience('api')
    .setExpirationTime('5m')
    .sign(forgerKey);
  const unknownKids = Array.from({ length: 20 }, (_, i) =>
    forged.replace(
      /^[^.]+/,
      Buffer.from(JSON.stringify({ alg: 'RS256', kid: `k${i}` })).toString('base64url'),
    ),
  );
  return [
    new UnsecuredJWT({ sub: 'mallory' }).setIssuer('https://corp.example').setAudience('api').encode(),
    forged,
    ...unknownKids,
    `${head}.${body}.`,
    `${head}.${body}`,
    `${head}..${'A'.repeat(342)}`,
    '.'.repeat(1000),
    'not-a-jwt',
    Buffer.from('{"alg":"none"').toString('base64url'),
    `${head}.${'x'.repeat(7000)}.${'y'.repeat(342)}`,
    `${head}.${'x'.repeat(9000)}.sig`,
    `${'%00'.repeat(50)}.${body}.sig`,
    `${head}.${Buffer.from('[1,2,3]').toString('base64url')}.sig`,
    `${head}.${Buffer.from('{"exp":"tomorrow","aud":{"x":1}}').toString('base64url')}.sig`,
  ];
}

test('a flood of forged and malformed JWTs over HTTP/1.1 and HTTP/2 is refused without a server error or a restart', async (t) => {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const forger = await generateKeyPair('RS256');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'corp-1', alg: 'RS256', use: 'sig' };
  const { files: dir, stateDir } = await exampleCopy(t, 'access-policy', ['web', 'api']);
  await writeFile(join(dir, 'access.yaml'), jwtPolicy([jwk]));
  const c = await startStandalone(t, { args: ['-f', dir], pool: '127.0.48.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'www.example.com', '/', 401);
  const valid = await new SignJWT({ sub: 'alice' })
    .setProtectedHeader({ alg: 'RS256', kid: 'corp-1' })
    .setIssuer('https://corp.example')
    .setAudience('api')
    .setExpirationTime('5m')
    .sign(privateKey);
  const before = await proxyProcess(c.admin);
  const tokens = await hostileTokens(valid, forger.privateKey);

  // Each token ten times, over a keep-alive pool of 16 connections and one HTTP/2 session of many streams.
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  t.after(() => agent.destroy());
  const session = http2.connect(`http://${address}:8080`);
  t.after(() => session.close());
  const h2 = (token: string) =>
    new Promise<number>((resolve, reject) => {
      const stream = session.request({
        ':path': '/',
        ':authority': 'www.example.com',
        authorization: `Bearer ${token}`,
      });
      stream.on('response', (head) => resolve(Number(head[':status'])));
      stream.on('error', reject);
      stream.resume();
      stream.end();
    });
  const h1 = async (token: string) =>
    (
      await httpRequest(8080, '/', {
        address,
        host: 'www.example.com',
        headers: { authorization: `Bearer ${token}` },
        agent,
        timeoutMs: 30_000,
      })
    ).status;
  const sent = Array.from({ length: 10 }, () => tokens).flat();
  const statuses = await Promise.all(sent.flatMap((token) => [h1(token), h2(token)]));
  const counts = new Map<number, number>();
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
  assert.ok(
    statuses.every((s) => s === 401 || s === 431),
    `only 401 and 431: ${JSON.stringify([...counts])}`,
  );
  assert.ok((counts.get(401) ?? 0) >= sent.length, `most are 401: ${JSON.stringify([...counts])}`);

  // Still serving the valid token on both protocols, from the same process.
  assert.equal(await h1(valid), 200);
  assert.equal(await h2(valid), 200);
  const after = await proxyProcess(c.admin);
  assert.equal(after.pid, before.pid, 'the proxy process was never replaced');
  assert.equal(after.restarts, before.restarts);

  // A token in the query passes too, and the backend never sees it: only the other parameters reach it.
  const inQuery = await httpRequest(8080, `/search?q=1&access_token=${valid}&page=2`, {
    address,
    host: 'www.example.com',
    timeoutMs: 10_000,
  });
  assert.equal(inQuery.status, 200);
  assert.equal((JSON.parse(inQuery.body) as { path: string }).path, '/search?q=1&page=2');
});

test('HTTP/2 streams reset while their forward-auth call is out: every call is given up, and the next request passes', async (t) => {
  const pending = new Set<ServerResponse>();
  let closedEarly = 0;
  let hold = true;
  const auth = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (!hold) {
      res.writeHead(200).end();
      return;
    }
    pending.add(res);
    res.on('close', () => {
      pending.delete(res);
      if (!res.writableEnded) closedEarly++;
    });
    req.resume();
  });
  auth.listen(0, '127.0.0.1');
  await once(auth, 'listening');
  t.after(() => {
    for (const res of pending) res.destroy();
    auth.close();
  });
  const authPort = (auth.address() as AddressInfo).port;

  const { files, stateDir } = await exampleCopy(t, 'external-auth', ['web']);
  const file = join(files, 'resources.yaml');
  const text = await readFile(file, 'utf8');
  await writeFile(
    file,
    text.replace('port: 3011', `port: ${authPort}`).replace('port: 3012', `port: ${await freePort()}`),
  );
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.49.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const before = await proxyProcess(c.admin);

  const session = http2.connect(`http://${address}:8080`);
  t.after(() => session.destroy());
  const STREAMS = 50;
  const streams = Array.from({ length: STREAMS }, () => {
    const stream = session.request({ ':path': '/', ':authority': 'app.example.com' });
    stream.on('error', () => {});
    stream.end();
    return stream;
  });
  // Every stream's call reached the authorization service and waits there; then the client gives up on all.
  await eventually('every stream waiting on its forward-auth call', async () =>
    pending.size === STREAMS ? true : undefined,
  );
  for (const stream of streams) stream.close(http2.constants.NGHTTP2_CANCEL);
  await eventually('every forward-auth call given up by the proxy', async () =>
    closedEarly === STREAMS && pending.size === 0 ? true : undefined,
  );

  hold = false;
  const reply = await httpRequest(8080, '/', {
    address,
    host: 'app.example.com',
    timeoutMs: 10_000,
  });
  assert.equal(reply.status, 200);
  const after = await proxyProcess(c.admin);
  assert.equal(after.pid, before.pid, 'the proxy process was never replaced');
});

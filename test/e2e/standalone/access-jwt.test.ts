// JWT authentication through the real proxy from YAML files: keys from a Secret and from a key set the proxy
// fetches from a local server, claims to headers, claims and scopes in access rules, and the attacks: `none`,
// HMAC signed with the public key, a forged `kid` (which costs one fetch, not one per token), expired and
// not-yet-valid tokens, an oversized token, header injection through a claim, and a key set server gone.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { exportJWK, exportSPKI, generateKeyPair, type JWK, SignJWT, UnsecuredJWT } from 'jose';
import { type EchoBody, httpRequest } from '../../support/http.js';
import { eventually, exampleCopy, programmedAddress, startStandalone, untilStatus } from './harness.js';

async function signer(kid: string) {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { publicKey, privateKey, jwk, kid };
}

type Signer = Awaited<ReturnType<typeof signer>>;

function token(
  key: Signer,
  issuer: string,
  claims: Record<string, unknown> = {},
  times: { exp?: number; nbf?: number } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ sub: 'alice', ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid })
    .setIssuer(issuer)
    .setAudience('api')
    .setIssuedAt()
    .setExpirationTime(times.exp ?? now + 300)
    .setNotBefore(times.nbf ?? now - 10)
    .sign(key.privateKey);
}

function files(jwksUrl: string, secretKeys: JWK[]): string {
  return `apiVersion: v1
kind: Secret
metadata: {name: corp-jwks, namespace: default}
stringData:
  jwks.json: '${JSON.stringify({ keys: secretKeys })}'
---
apiVersion: gateway.portico.io/v1alpha1
kind: AccessPolicy
metadata: {name: jwt, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: www}]
  jwt:
    providers:
    - name: corp
      issuer: https://corp.example
      audiences: [api]
      jwks: {secretRef: {name: corp-jwks}}
      claimToHeaders: [{claim: sub, header: x-user}, {claim: team, header: x-team}]
    - name: remote
      issuer: https://remote.example
      audiences: [api]
      jwks: {remote: {url: "${jwksUrl}", cacheDurationSeconds: 1}}
      claimToHeaders: [{claim: sub, header: x-user}]
    tokenSources:
    - {type: Header, name: authorization, prefix: "Bearer "}
    - {type: Cookie, name: session}
  rules:
  - {name: writers, action: Allow, methods: [POST], scopes: [write]}
  - {name: readers, action: Allow, methods: [GET]}
  defaultAction: Deny
`;
}

test('JWT: valid tokens pass with claim headers; every forged, stale or hostile one is refused', async (t) => {
  const corp = await signer('corp-1');
  const remote = await signer('remote-1');
  const forger = await signer('remote-1');
  let fetches = 0;
  let serveKeys = true;
  const jwksServer = createServer((_req, res) => {
    fetches++;
    if (!serveKeys) res.writeHead(503).end();
    else
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [remote.jwk] }));
  });
  jwksServer.listen(0, '127.0.0.1');
  await once(jwksServer, 'listening');
  t.after(() => jwksServer.close());
  const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`;

  const { files: dir, stateDir } = await exampleCopy(t, 'access-policy', ['web', 'api']);
  await writeFile(join(dir, 'access.yaml'), files(jwksUrl, [corp.jwk]));
  const c = await startStandalone(t, { args: ['-f', dir], pool: '127.0.47.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const get = (headers: Record<string, string>, method = 'GET') =>
    httpRequest(8080, '/', { address, host: 'www.example.com', headers, method, timeoutMs: 5000 });
  const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` });
  await untilStatus(address, 8080, 'www.example.com', '/', 401);

  // Valid: the claim headers reach the backend, a client's own x-user is replaced, an absent claim's removed.
  const ok = await get({
    ...bearer(await token(corp, 'https://corp.example')),
    'x-user': 'mallory',
    'x-team': 'x',
  });
  assert.equal(ok.status, 200);
  const seen = JSON.parse(ok.body) as EchoBody;
  assert.deepEqual(seen.headers['X-User'], ['alice']);
  assert.equal(seen.headers['X-Team'], undefined);
  assert.equal(
    (await get({ cookie: `a=b; session=${await token(corp, 'https://corp.example')}` })).status,
    200,
  );
  assert.equal((await get(bearer(await token(remote, 'https://remote.example')))).status, 200);

  // Rules after authentication: POST needs the write scope.
  assert.equal((await get(bearer(await token(corp, 'https://corp.example')), 'POST')).status, 403);
  const writer = await token(corp, 'https://corp.example', { scope: 'read write' });
  assert.equal((await get(bearer(writer), 'POST')).status, 200);

  const refused = async (what: string, headers: Record<string, string>) => {
    const r = await get(headers);
    assert.equal(r.status, 401, what);
    assert.equal(r.body, '', what);
  };
  await refused('no token', {});
  await refused(
    'alg none',
    bearer(
      new UnsecuredJWT({ sub: 'alice' })
        .setIssuer('https://corp.example')
        .setAudience('api')
        .setExpirationTime('5m')
        .encode(),
    ),
  );
  // Algorithm confusion: HS256 with the RSA public key (its PEM text) as the HMAC secret.
  const pem = new TextEncoder().encode(await exportSPKI(corp.publicKey));
  const confused = await new SignJWT({ sub: 'alice' })
    .setProtectedHeader({ alg: 'HS256', kid: 'corp-1' })
    .setIssuer('https://corp.example')
    .setAudience('api')
    .setExpirationTime('5m')
    .sign(pem);
  await refused('HS256 with the public key', bearer(confused));
  const now = Math.floor(Date.now() / 1000);
  await refused('expired', bearer(await token(corp, 'https://corp.example', {}, { exp: now - 3600 })));
  await refused('not yet valid', bearer(await token(corp, 'https://corp.example', {}, { nbf: now + 3600 })));
  await refused(
    'wrong audience',
    bearer(
      await new SignJWT({})
        .setProtectedHeader({ alg: 'RS256', kid: 'corp-1' })
        .setIssuer('https://corp.example')
        .setAudience('other')
        .setExpirationTime('5m')
        .sign(corp.privateKey),
    ),
  );
  await refused('unknown issuer', bearer(await token(corp, 'https://elsewhere.example')));
  await refused('oversized', bearer(await token(corp, 'https://corp.example', { pad: 'x'.repeat(9000) })));
  await refused(
    'claim header injection',
    bearer(await token(corp, 'https://corp.example', { sub: 'a\r\nx-admin: true' })),
  );

  // A forged key under a kid the set holds fails the signature; under a new kid it costs one fetch, not one each.
  await refused('forged key, known kid', bearer(await token(forger, 'https://remote.example')));
  const forgedKid = { ...forger, kid: 'rotated-maybe' };
  const before = fetches;
  for (let i = 0; i < 5; i++)
    await refused(`forged kid ${i}`, bearer(await token(forgedKid, 'https://remote.example')));
  assert.ok(fetches - before <= 2, `${fetches - before} fetches for 5 unknown kids`);

  // The key set server fails: once the cached set is past its time, nothing verifies (no stale or default key).
  serveKeys = false;
  await eventually('tokens of the remote provider refused', async () => {
    const r = await get(bearer(await token(remote, 'https://remote.example')));
    return r.status === 401 ? r : undefined;
  });
  // The other provider's keys (a Secret) are unaffected.
  assert.equal((await get(bearer(await token(corp, 'https://corp.example')))).status, 200);
});

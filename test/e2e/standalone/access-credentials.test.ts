// Basic auth from an htpasswd Secret (bcrypt and {SHA}) and API keys from Secrets (a header, or a query
// parameter), through the real proxy from YAML: the credential never reaches the backend, a wrong one is 401,
// and the admin API's config dump shows no hash and no key digest.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import bcrypt from 'bcryptjs';
import { type EchoBody, httpRequest } from '../../support/http.js';
import { adminGet, exampleCopy, programmedAddress, startStandalone, untilStatus } from './harness.js';

const sha = (password: string) => `{SHA}${createHash('sha1').update(password).digest('base64')}`;

function files(htpasswd: string): string {
  return `apiVersion: v1
kind: Secret
metadata: {name: users, namespace: default}
stringData:
  .htpasswd: |
${htpasswd
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
---
apiVersion: v1
kind: Secret
metadata: {name: keys, namespace: default}
stringData: {ci: "key-of-ci-0123456789", ops: "key-of-ops-9876543210"}
---
apiVersion: gateway.portico.io/v1alpha1
kind: AccessPolicy
metadata: {name: dashboard, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: www, sectionName: api}]
  basicAuth: {secretRef: {name: users}}
---
apiVersion: gateway.portico.io/v1alpha1
kind: AccessPolicy
metadata: {name: machines, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: www}]
  apiKeys:
    secretRefs: [{name: keys}]
    source: {type: QueryParameter, name: key}
`;
}

test('basic auth and API keys: right credentials pass without reaching the backend, wrong ones get 401', async (t) => {
  const htpasswd = `alice:${bcrypt.hashSync('wonderland', 8)}\nbob:${sha('builder')}`;
  const { files: dir, stateDir } = await exampleCopy(t, 'access-policy', ['web', 'api']);
  await writeFile(join(dir, 'access.yaml'), files(htpasswd));
  const c = await startStandalone(t, { args: ['-f', dir], pool: '127.0.48.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const get = (path: string, headers: Record<string, string> = {}) =>
    httpRequest(8080, path, { address, host: 'www.example.com', headers, timeoutMs: 5000 });
  const basic = (user: string, password: string) => ({
    authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
  });
  await untilStatus(address, 8080, 'www.example.com', '/', 401);

  // The rule's basic auth replaces the route's API keys there.
  for (const [user, password] of [
    ['alice', 'wonderland'],
    ['bob', 'builder'],
  ] as const) {
    const ok = await get('/api/x', basic(user, password));
    assert.equal(ok.status, 200, user);
    assert.equal((JSON.parse(ok.body) as EchoBody).headers.Authorization, undefined, 'no password upstream');
  }
  for (const [what, headers] of [
    ['no credentials', {}],
    ['wrong password', basic('alice', 'looking-glass')],
    ['unknown user', basic('carol', 'wonderland')],
    ['a SHA user with a bcrypt password', basic('bob', 'wonderland')],
  ] as const) {
    const r = await get('/api/x', headers);
    assert.equal(r.status, 401, what);
    assert.match(r.headers['www-authenticate'] as string, /^Basic realm=/, what);
  }

  // API keys in a query parameter: the key is taken out of the query before the backend, the rest stays.
  const ok = await get('/page?a=1&key=key-of-ops-9876543210&b=2');
  assert.equal(ok.status, 200);
  assert.equal((JSON.parse(ok.body) as EchoBody).path, '/page?a=1&b=2');
  assert.equal((await get('/page?key=key-of-ci-0123456789')).status, 200);
  assert.equal((await get('/page?key=key-of-ci-012345678')).status, 401);
  assert.equal((await get('/page')).status, 401);

  // The config dump shows neither the hashes nor the key digests.
  const dump = JSON.stringify(await adminGet(c.admin, '/api/fleets'));
  assert.ok(dump.includes('credentialDigest'), 'the dump has the policy');
  assert.ok(!dump.includes('$2'), 'no bcrypt hash in the dump');
  assert.ok(!dump.includes(sha('builder').slice(5)), 'no SHA hash in the dump');
  assert.ok(
    !dump.includes(createHash('sha256').update('key-of-ci-0123456789').digest('hex')),
    'no key digest',
  );
});

// The access pipeline's pure parts: access rules (CIDR, method, header, claims, scopes; first match wins), the
// token sources, claim values as headers, credentials, query parameters taken out, and a step that throws.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { apiKeysStep, basicCredentials, passwordMatches } from '../../src/proxy/access/credentials.js';
import { claimHeaderValue, tokenOf } from '../../src/proxy/access/jwt.js';
import { compileAccessPolicy, runPolicy, withoutQueryParameters } from '../../src/proxy/access/pipeline.js';
import type { AccessRequest } from '../../src/proxy/access/request-view.js';
import { accessRulesStep } from '../../src/proxy/access/rules.js';
import { accessRequest } from '../support/access-request.js';

const request = accessRequest;

test('access rules: the first match decides; every field a rule sets must match; else the default', () => {
  const step = accessRulesStep(
    [
      { name: 'no-delete', action: 'Deny', methods: ['DELETE'] },
      { name: 'office', action: 'Allow', clientCidrs: ['10.0.0.0/8', 'fd00::/8'] },
      { name: 'token', action: 'Allow', headers: [{ name: 'x-ok', value: 'yes' }, { name: 'x-any' }] },
      { name: 'admins', action: 'Allow', claims: [{ name: 'role', values: ['admin'] }], scopes: ['write'] },
    ],
    'Deny',
  );
  const verdict = (r: AccessRequest, claims?: Record<string, unknown>) => {
    const o = step.check(r, claims === undefined ? {} : { claims });
    assert.ok(!(o instanceof Promise));
    return o.allow ? `allow ${o.rule}` : `deny ${o.rule} ${o.status}`;
  };
  assert.equal(verdict(request()), 'allow office');
  assert.equal(verdict(request({ method: 'DELETE' })), 'deny no-delete 403');
  assert.equal(verdict(request({ clientAddress: '192.168.1.1' })), 'deny default 403');
  assert.equal(verdict(request({ clientAddress: 'fd00::1' })), 'allow office');
  assert.equal(
    verdict(request({ clientAddress: '1.1.1.1', headers: { 'x-ok': 'yes' } })),
    'deny default 403',
  );
  assert.equal(
    verdict(request({ clientAddress: '1.1.1.1', headers: { 'x-ok': 'yes', 'x-any': '' } })),
    'allow token',
  );
  assert.equal(
    verdict(request({ clientAddress: '1.1.1.1' }), { role: ['user', 'admin'], scope: 'read write' }),
    'allow admins',
  );
  assert.equal(
    verdict(request({ clientAddress: '1.1.1.1' }), { role: 'admin', scp: ['read'] }),
    'deny default 403',
  );
  assert.equal(
    verdict(request({ clientAddress: '1.1.1.1' })),
    'deny default 403',
    'no JWT: a claims rule never matches',
  );
});

test('tokens: header with its prefix, cookie, query parameter, first source that has one', () => {
  const sources = [
    { type: 'Header' as const, name: 'authorization', prefix: 'Bearer ' },
    { type: 'Cookie' as const, name: 'session' },
    { type: 'QueryParameter' as const, name: 'access_token' },
  ];
  assert.equal(tokenOf(request({ headers: { authorization: 'bearer abc' } }), sources), 'abc');
  assert.equal(tokenOf(request({ headers: { authorization: 'Basic abc' } }), sources), undefined);
  assert.equal(tokenOf(request({ headers: { cookie: 'x=1; session=tok; y=2' } }), sources), 'tok');
  assert.equal(tokenOf(request({ search: '?a=1&access_token=q' }), sources), 'q');
  assert.equal(tokenOf(request(), sources), undefined);
});

test('claim values as headers: CR, LF, NUL and control characters refused, length bounded', () => {
  assert.deepEqual(claimHeaderValue('alice'), { value: 'alice' });
  assert.deepEqual(claimHeaderValue(['a', 'b']), { value: 'a,b' });
  assert.deepEqual(claimHeaderValue(42), { value: '42' });
  assert.equal(claimHeaderValue(undefined), undefined);
  for (const bad of ['a\r\nx-admin: 1', 'a\nb', 'a\0b', 'a\u0001b', 'x'.repeat(5000)])
    assert.ok('problem' in (claimHeaderValue(bad) ?? { value: '' }), JSON.stringify(bad.slice(0, 12)));
});

test('basic credentials and htpasswd {SHA}; API keys by digest, from a header', async () => {
  assert.deepEqual(basicCredentials(`Basic ${Buffer.from('u:p:q').toString('base64')}`), {
    user: 'u',
    password: 'p:q',
  });
  assert.equal(basicCredentials('Bearer x'), undefined);
  const sha = `{SHA}${createHash('sha1').update('pw').digest('base64')}`;
  assert.equal(await passwordMatches('pw', sha), true);
  assert.equal(await passwordMatches('pW', sha), false);
  const step = apiKeysStep({
    source: { type: 'Header', name: 'x-api-key' },
    credentialDigests: [createHash('sha256').update('k1').digest('hex')],
  });
  assert.deepEqual(step.check(request({ headers: { 'x-api-key': 'k1' } }), {}), {
    allow: true,
    remove: ['x-api-key'],
  });
  assert.equal(
    (step.check(request({ headers: { 'x-api-key': 'k2' } }), {}) as { allow: boolean }).allow,
    false,
  );
});

test('query parameters taken out of a target, the rest kept as it came', () => {
  assert.equal(withoutQueryParameters('/p?a=1&key=s&b=2', ['key']), '/p?a=1&b=2');
  assert.equal(withoutQueryParameters('/p?key=s', ['key']), '/p');
  assert.equal(withoutQueryParameters('/p?k%65y=s&c', ['key']), '/p?c');
  assert.equal(withoutQueryParameters('/p', ['key']), '/p');
});

test('a refused policy refuses everything; a step that throws refuses (fail closed)', async () => {
  const refused = compileAccessPolicy({
    name: 'AccessPolicy ns/p',
    kind: 'AccessPolicy',
    refused: 'x',
    rules: [],
    defaultAction: 'Allow',
  });
  const v = await runPolicy(refused, request());
  assert.equal(v.allow, false);
  const throwing = {
    name: 'p',
    credentialQuery: [],
    steps: [
      {
        check: () => {
          throw new Error('boom');
        },
      },
    ],
  };
  const t = await runPolicy(throwing, request());
  assert.deepEqual(t.allow ? 'allowed' : [t.status, t.rule], [403, 'error']);
});

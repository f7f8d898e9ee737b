import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REDACTED, redact } from '../../src/platform/redact.js';
import { expectStatus } from '../../src/provider/kubernetes/api-client.js';

const KEY = '-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n';
const secret = () => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'tls', namespace: 'default' },
  type: 'kubernetes.io/tls',
  data: { 'tls.crt': 'Y2VydA==', 'tls.key': Buffer.from(KEY).toString('base64') },
  stringData: { token: 'hunter2' },
});

test('Secrets keep their keys and lose every value, wherever they are nested', () => {
  const list = { kind: 'SecretList', items: [secret(), { kind: 'ConfigMap', data: { a: 'visible' } }] };
  const out = redact(list);
  assert.deepEqual(out.items[0], {
    ...secret(),
    data: { 'tls.crt': REDACTED, 'tls.key': REDACTED },
    stringData: { token: REDACTED },
  });
  assert.deepEqual(out.items[1], { kind: 'ConfigMap', data: { a: 'visible' } }, 'other kinds are shown');
  assert.deepEqual(list.items[0], secret(), 'the input is not changed');
});

test('a private key field is redacted in any object, a fleet config included', () => {
  const fleet = {
    fleet: 'default/eg',
    secrets: [{ name: 'default/tls', certificatePem: 'C', privateKeyPem: KEY }],
  };
  assert.deepEqual(redact(fleet).secrets, [
    { name: 'default/tls', certificatePem: 'C', privateKeyPem: REDACTED },
  ]);
  assert.equal(fleet.secrets[0]?.privateKeyPem, KEY);
  assert.equal(redact('text'), 'text');
  assert.equal(redact(null), null);
});

test('an API error quoting an unexpected object quotes it redacted', () => {
  assert.throws(
    () => expectStatus({ status: 200, body: secret() }, 'create Secret default/tls', [201]),
    (error: Error) =>
      /create Secret default\/tls: HTTP 200: .*"tls.key":"<redacted>"/.test(error.message) &&
      !error.message.includes('hunter2') &&
      !error.message.includes(secret().data['tls.key']),
  );
});

test('the last-applied-configuration annotation (a whole copy of the object) is redacted on any kind', () => {
  const annotation = 'kubectl.kubernetes.io/last-applied-configuration';
  const applied = JSON.stringify({ ...secret(), metadata: { name: 'tls', namespace: 'default' } });
  const objects = [
    { ...secret(), metadata: { name: 'tls', annotations: { [annotation]: applied, team: 'a' } } },
    { kind: 'Gateway', metadata: { name: 'eg', annotations: { [annotation]: '{"spec":{}}' } } },
  ];
  const out = redact(objects);
  for (const o of out) assert.equal(o.metadata.annotations[annotation], REDACTED);
  assert.equal(out[0]!.metadata.annotations.team, 'a', 'other annotations are shown');
  assert.ok(!JSON.stringify(out).includes('hunter2'));
});

test("an AccessPolicy's OIDC client secret and cookie key are redacted in a fleet config", () => {
  const policy = {
    name: 'AccessPolicy default/login',
    oidc: {
      issuer: 'https://id.example',
      clientId: 'app',
      clientSecret: 'hunter2',
      cookieSecret: 'c2VjcmV0',
    },
  };
  const out = redact({ policies: [policy] }).policies[0]!.oidc;
  assert.deepEqual(out, {
    issuer: 'https://id.example',
    clientId: 'app',
    clientSecret: REDACTED,
    cookieSecret: REDACTED,
  });
});

import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { fleetOfSubjectAltName, generateCertificates } from '../../../src/certificates/certs.js';
import type { FleetInfra } from '../../../src/ir/fleet-infra.js';
import type { ApiClient, JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { createFleetClientSecrets } from '../../../src/provider/kubernetes/fleet-client-secrets.js';

const ca = generateCertificates({ namespace: 'sys' });
const authority = { caCertPem: ca.caCertPem, caKeyPem: ca.caKeyPem };
const INFRA: FleetInfra = {
  fleet: 'default/eg',
  name: 'proxy-default-eg-e41e7b31',
  namespace: 'sys',
  labels: { 'app.kubernetes.io/managed-by': 'portico-gateway', 'app.kubernetes.io/name': 'portico-proxy' },
  propagated: { labels: {}, annotations: {} },
  gateways: ['default/eg'],
  ports: [],
};
const ACCOUNT = { name: INFRA.name, uid: 'sa-uid-1' };
const NAME = 'proxy-default-eg-e41e7b31-client-cert';

/** Secrets in memory with the API server's answers; every request is recorded as `METHOD name`. */
function fakeApi(): { client: ApiClient; secrets: Map<string, JsonObject>; calls: string[] } {
  const secrets = new Map<string, JsonObject>();
  const calls: string[] = [];
  const client: ApiClient = {
    async request(method, path, body) {
      assert.ok(path.startsWith('/api/v1/namespaces/sys/secrets'), `only the controller namespace: ${path}`);
      const name = path.split('/secrets/')[1];
      calls.push(`${method} ${name ?? ''}`.trim());
      const found = name === undefined ? undefined : secrets.get(name);
      if (method === 'GET')
        return found === undefined ? { status: 404, body: {} } : { status: 200, body: found };
      if (method === 'POST') {
        const object = body as JsonObject;
        secrets.set(String((object.metadata as JsonObject).name), object);
        return { status: 201, body: object };
      }
      if (method === 'PATCH' && found !== undefined && name !== undefined) {
        const patch = body as JsonObject;
        const merged = {
          ...found,
          metadata: { ...(found.metadata as JsonObject), ...(patch.metadata as JsonObject) },
          data: patch.data,
        };
        secrets.set(name, merged);
        return { status: 200, body: merged };
      }
      if (method === 'DELETE' && name !== undefined) {
        return secrets.delete(name) ? { status: 200, body: {} } : { status: 404, body: {} };
      }
      throw new Error(`unexpected ${method} ${path}`);
    },
    watch() {
      throw new Error('unused');
    },
  };
  return { client, secrets, calls };
}

function certOf(secret: JsonObject | undefined): X509Certificate {
  const data = (secret?.data ?? {}) as Record<string, string>;
  return new X509Certificate(Buffer.from(data['tls.crt'] ?? '', 'base64').toString('utf8'));
}

test("a fleet's Secret holds its own identity from the CA, owned by its ServiceAccount, and is written once", async () => {
  const { client, secrets, calls } = fakeApi();
  const fleetSecrets = createFleetClientSecrets({ client, ca: authority, log: () => {} });
  assert.equal(await fleetSecrets.ensure(INFRA, ACCOUNT), undefined);
  const secret = secrets.get(NAME);
  assert.ok(secret !== undefined);
  assert.equal(secret.type, 'kubernetes.io/tls');
  const metadata = secret.metadata as JsonObject;
  assert.deepEqual(metadata.ownerReferences, [
    { apiVersion: 'v1', kind: 'ServiceAccount', name: INFRA.name, uid: 'sa-uid-1' },
  ]);
  assert.equal(
    (metadata.labels as Record<string, string>)['app.kubernetes.io/managed-by'],
    'portico-gateway',
  );
  const cert = certOf(secret);
  assert.equal(fleetOfSubjectAltName(cert.subjectAltName), 'default/eg');
  assert.ok(cert.verify(new X509Certificate(ca.caCertPem).publicKey));
  const key = Buffer.from((secret.data as Record<string, string>)['tls.key']!, 'base64').toString('utf8');
  assert.ok(cert.checkPrivateKey(createPrivateKey(key)));
  assert.deepEqual(calls, ['GET ' + NAME, 'POST']);

  await fleetSecrets.ensure(INFRA, ACCOUNT);
  assert.equal(calls.length, 2, 'a current Secret costs no request');
  // A restarted controller reads it once and keeps it.
  const restarted = createFleetClientSecrets({ client, ca: authority, log: () => {} });
  await restarted.ensure(INFRA, ACCOUNT);
  assert.deepEqual(calls.slice(2), ['GET ' + NAME]);
  assert.equal(certOf(secrets.get(NAME)).serialNumber, cert.serialNumber);
});

test('an identity from another CA, for another fleet, with another owner or near its end is issued again', async () => {
  const { client, secrets } = fakeApi();
  const controller = (now?: () => Date) =>
    createFleetClientSecrets({ client, ca: authority, log: () => {}, ...(now === undefined ? {} : { now }) });
  const caKey = new X509Certificate(ca.caCertPem).publicKey;
  const other = generateCertificates();
  const otherCa = { caCertPem: other.caCertPem, caKeyPem: other.caKeyPem };
  await createFleetClientSecrets({ client, ca: otherCa, log: () => {} }).ensure(INFRA, ACCOUNT);
  assert.ok(!certOf(secrets.get(NAME)).verify(caKey));

  await controller().ensure(INFRA, ACCOUNT);
  assert.ok(certOf(secrets.get(NAME)).verify(caKey), 'from our CA now');
  await controller().ensure({ ...INFRA, fleet: 'default/other' }, ACCOUNT);
  assert.equal(fleetOfSubjectAltName(certOf(secrets.get(NAME)).subjectAltName), 'default/other');
  await controller().ensure(INFRA, ACCOUNT);
  assert.equal(
    fleetOfSubjectAltName(certOf(secrets.get(NAME)).subjectAltName),
    'default/eg',
    'its own again',
  );
  const recreated = { ...ACCOUNT, uid: 'sa-uid-2' };
  await controller().ensure(INFRA, recreated);
  const renamed = secrets.get(NAME);
  assert.ok(renamed !== undefined);
  const owners = (renamed.metadata as JsonObject).ownerReferences as { uid: string }[];
  assert.equal(owners[0]?.uid, 'sa-uid-2');
  // 701 days on, the 730-day certificate is within its last 30 days: renewed.
  const before = certOf(secrets.get(NAME)).serialNumber;
  await controller(() => new Date(Date.now() + 701 * 86_400_000)).ensure(INFRA, recreated);
  assert.notEqual(certOf(secrets.get(NAME)).serialNumber, before);
});

test('a same-name Secret Portico does not manage is reported and never touched; removal deletes only ours', async () => {
  const { client, secrets, calls } = fakeApi();
  const foreign = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: NAME, namespace: 'sys' },
    data: { x: 'eQ==' },
  };
  secrets.set(NAME, foreign);
  const fleetSecrets = createFleetClientSecrets({ client, ca: authority, log: () => {} });
  assert.match(
    (await fleetSecrets.ensure(INFRA, ACCOUNT)) ?? '',
    /Secret sys\/.*-client-cert already exists and is not managed by portico-gateway/,
  );
  await fleetSecrets.remove('sys', INFRA.name);
  assert.equal(secrets.get(NAME), foreign);
  assert.ok(!calls.some((c) => c.startsWith('PATCH') || c.startsWith('DELETE')), calls.join(', '));

  secrets.delete(NAME);
  await fleetSecrets.ensure(INFRA, ACCOUNT);
  await fleetSecrets.remove('sys', INFRA.name);
  assert.equal(secrets.has(NAME), false);
});
